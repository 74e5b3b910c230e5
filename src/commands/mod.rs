//! One module per subcommand, each with its `Args` and a `run`.

pub mod check;
pub mod completions;
pub mod diagnose;
pub mod explain;
pub mod mcp;
pub mod merge;
pub mod repair;
pub mod repair_storage;
pub mod replay;
pub mod request;
pub mod rules;
pub mod sessions;
pub mod sessions_stores;

use std::cell::RefCell;
use std::io::{BufWriter, Write};

use crate::core::RewindError;
use crate::report::concise::ConcisePrinter;
use crate::report::github::GithubPrinter;
use crate::report::html::HtmlPrinter;
use crate::report::human::{HumanPrinter, Summary};
use crate::report::json::JsonPrinter;
use crate::report::jsonl::JsonlPrinter;
use crate::report::junit::JunitPrinter;
use crate::report::sarif::SarifPrinter;
use crate::report::statistics::StatisticsPrinter;
use crate::report::{OutputFormat, Printer};
use crate::text::InputText;

/// Output formats of the commands that print a table or a document.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum HumanOrJson {
    Human,
    Json,
}

/// `doc` inside the envelope every command's `--format json` document has: `version` (of the
/// document's shape, [`crate::report::json::SCHEMA_VERSION`]) and `tool` first, then `doc`'s
/// members (a `doc` that is not an object goes under `data`).
pub fn envelope(doc: serde_json::Value) -> serde_json::Value {
    let mut out = serde_json::Map::new();
    out.insert(
        "version".to_owned(),
        crate::report::json::SCHEMA_VERSION.into(),
    );
    out.insert(
        "tool".to_owned(),
        serde_json::json!({"name": "rewind", "version": env!("CARGO_PKG_VERSION")}),
    );
    match doc {
        serde_json::Value::Object(members) => out.extend(members),
        other => {
            out.insert("data".to_owned(), other);
        }
    }
    serde_json::Value::Object(out)
}

/// Prints an error the way every command does: one line on standard error, and the items it
/// lists (if any) each on a line of its own after it, indented.
pub fn print_error(err: &RewindError, color: bool) {
    let label = if color {
        "\u{1b}[1;31merror\u{1b}[0m"
    } else {
        "error"
    };
    // Cut before escaping too, so that a long message is not escaped whole only to be cut.
    let message = err.to_string();
    let message = crate::text::cap_line(&message, crate::core::MAX_MESSAGE);
    let text = InputText::from(&message).for_terminal();
    err_line(&format!("{label}: {text}"));
    for item in err.items() {
        let item = crate::text::cap_line(item, crate::core::MAX_MESSAGE);
        err_line(&format!("  {}", InputText::from(&item).for_terminal()));
    }
}

thread_local! {
    /// Where this thread's command output goes instead of the process's standard output and
    /// error, while [`capture`] runs.
    static CAPTURED: RefCell<Option<(Vec<u8>, Vec<u8>)>> = const { RefCell::new(None) };
}

/// Runs `f` with this thread's command output (standard output, and the lines commands print on
/// standard error) collected instead of printed; returns what `f` returned and the two outputs.
pub fn capture<T>(f: impl FnOnce() -> T) -> (T, Vec<u8>, Vec<u8>) {
    let before = CAPTURED.with(|c| c.replace(Some((Vec::new(), Vec::new()))));
    let value = f();
    let (out, err) = CAPTURED.with(|c| c.replace(before)).unwrap_or_default();
    (value, out, err)
}

/// Whether this thread's output is being captured (then no progress is shown).
pub fn capturing() -> bool {
    CAPTURED.with(|c| c.borrow().is_some())
}

/// A command's standard output: the process's, or the buffer of [`capture`].
#[derive(Debug, Default, Clone, Copy)]
pub struct Out;

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let captured = CAPTURED.with(|c| {
            c.borrow_mut().as_mut().map(|(out, _)| {
                out.extend_from_slice(buf);
            })
        });
        match captured {
            Some(()) => Ok(buf.len()),
            None => std::io::stdout().lock().write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self.write(buf) {
            Ok(n) if n == buf.len() => Ok(()),
            Ok(n) => std::io::stdout().lock().write_all(&buf[n..]),
            Err(e) => Err(e),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if CAPTURED.with(|c| c.borrow().is_some()) {
            return Ok(());
        }
        std::io::stdout().flush()
    }
}

/// Prints one line on standard error (or into the buffer of [`capture`]), cut to
/// [`crate::core::MAX_MESSAGE`] bytes: every line rewind writes there goes through here, so
/// no line is longer than that, whatever it quotes.
pub fn err_line(line: &str) {
    // A run a signal is ending says nothing more: what went wrong may be the handler's removal
    // of its copies.
    if crate::ingest::private::signalled().is_some() {
        return;
    }
    let line = crate::text::cap_line(line, crate::core::MAX_MESSAGE);
    let line: &str = &line;
    let captured = CAPTURED.with(|c| {
        c.borrow_mut().as_mut().map(|(_, err)| {
            err.extend_from_slice(line.as_bytes());
            err.push(b'\n');
        })
    });
    if captured.is_none() {
        eprintln!("{line}");
    }
}

/// Standard output, buffered.
pub fn stdout() -> BufWriter<Out> {
    BufWriter::new(Out)
}

/// Where and how much of a report `diagnose` and `check` print.
#[derive(Debug, Clone, clap::Args)]
pub struct ReportArgs {
    /// Write the report to this file instead of standard output (never coloured).
    #[arg(long, short = 'o', value_name = "PATH", value_hint = clap::ValueHint::FilePath)]
    pub output_file: Option<std::path::PathBuf>,

    /// Print only the findings: no tables, no summary lines (the exit status is the same).
    #[arg(long, short = 'q')]
    pub quiet: bool,

    /// Print how many findings each rule made (rule, count, severity), most first, instead of
    /// the findings (`--format json`: as JSON).
    #[arg(long)]
    pub statistics: bool,
}

impl ReportArgs {
    /// The format units are prepared for: with `--statistics`, none that renders findings.
    pub fn rendered(&self, format: OutputFormat) -> OutputFormat {
        if self.statistics {
            OutputFormat::Json
        } else {
            format
        }
    }

    /// Whether the report is read by people as it is printed (`human` or `concise`, without
    /// `--quiet`): only then is a progress indicator drawn.
    pub fn for_people(&self, format: OutputFormat) -> bool {
        !self.quiet && matches!(format, OutputFormat::Human | OutputFormat::Concise)
    }
}

/// Where a report goes: standard output, or the file of `-o/--output-file`.
pub enum Sink {
    Stdout(BufWriter<Out>),
    File(BufWriter<std::fs::File>),
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Sink::Stdout(w) => w.write(buf),
            Sink::File(w) => w.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            Sink::Stdout(w) => w.write_all(buf),
            Sink::File(w) => w.write_all(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Stdout(w) => w.flush(),
            Sink::File(w) => w.flush(),
        }
    }
}

/// Opens where a report goes: the file named with `-o` (created or truncated), or standard
/// output. An HTML page is refused on a terminal without `-o`: it is a whole document, not
/// something to read there.
pub fn report_sink(
    output_file: Option<&std::path::Path>,
    format: OutputFormat,
    inputs: &[std::path::PathBuf],
) -> Result<Sink, RewindError> {
    use std::io::IsTerminal;
    match output_file {
        // Creating the report truncates its file: never one of the inputs.
        Some(path) if is_one_of(path, inputs) => Err(RewindError::Usage(format!(
            "`{}` is an input: the report would overwrite it; write it to another file",
            InputText::from(&path.display().to_string()).for_terminal()
        ))),
        Some(path) => std::fs::File::create(path)
            .map(|f| Sink::File(BufWriter::new(f)))
            .map_err(|e| {
                RewindError::Usage(format!(
                    "cannot write the report to `{}`: {e}",
                    InputText::from(&path.display().to_string()).for_terminal()
                ))
            }),
        None if format == OutputFormat::Html
            && !capturing()
            && std::io::stdout().is_terminal() =>
        {
            Err(RewindError::Usage(
                "`--format html` writes a whole page: not to a terminal; write it to a file with `-o report.html`"
                    .to_owned(),
            ))
        }
        None => Ok(Sink::Stdout(stdout())),
    }
}

/// Whether `path` names an existing file that is one of `inputs`.
fn is_one_of(path: &std::path::Path, inputs: &[std::path::PathBuf]) -> bool {
    let Ok(path) = path.canonicalize() else {
        return false;
    };
    inputs
        .iter()
        .any(|input| input.canonicalize().is_ok_and(|input| input == path))
}

/// The printer for an output format, writing to `out`; `quiet` leaves out tables and summary
/// lines, `statistics` prints findings per rule instead of the findings.
pub fn make_printer(
    out: Sink,
    format: OutputFormat,
    color: bool,
    summary: Summary,
    help_uri_base: Option<String>,
    report: &ReportArgs,
) -> Box<dyn Printer> {
    if report.statistics {
        return Box::new(StatisticsPrinter::new(out, format == OutputFormat::Json));
    }
    let summary = if report.quiet { Summary::None } else { summary };
    match format {
        OutputFormat::Human => Box::new(HumanPrinter::new(out, color, summary)),
        OutputFormat::Concise => Box::new(ConcisePrinter::new(out, report.quiet)),
        OutputFormat::Json => Box::new(JsonPrinter::new(out)),
        OutputFormat::Jsonl => Box::new(JsonlPrinter::new(out)),
        OutputFormat::Sarif => Box::new(SarifPrinter::new(out, help_uri_base)),
        OutputFormat::Github => Box::new(GithubPrinter::new(out)),
        OutputFormat::Junit => Box::new(JunitPrinter::new(out)),
        OutputFormat::Html => Box::new(HtmlPrinter::new(out)),
    }
}

/// A store argument that is a folder of client transcripts (Claude Code's projects folder or one
/// project's folder, Codex's sessions folder), resolved to the transcript of each session
/// named with `--session`; `None` for any other argument. `rewind sessions` lists such folders,
/// so every command that takes a store takes them too.
pub fn transcript_sessions(
    store: &std::path::Path,
    sessions: &[String],
) -> Result<Option<Vec<std::path::PathBuf>>, RewindError> {
    if crate::ingest::input::is_stdin(store)
        || !store.is_dir()
        || !crate::formats::is_transcript_folder(store)
    {
        return Ok(None);
    }
    let shown = InputText::from(&store.display().to_string()).for_terminal();
    if sessions.is_empty() {
        return Err(RewindError::Usage(format!(
            "`{shown}` is a folder of Claude Code or Codex transcripts: name a session with `--session ID` (`rewind sessions {shown}` lists them), or check every transcript with `rewind check {shown}`"
        )));
    }
    sessions
        .iter()
        .map(|id| {
            crate::formats::session_in_folder(store, id).ok_or_else(|| RewindError::NoSuchSession {
                path: store.to_path_buf(),
                id: id.clone(),
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}
