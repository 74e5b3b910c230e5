//! `rewind redact INPUT… -o OUTPUT`: a copy of each input with its secrets replaced by
//! placeholders, still diagnosable (DEVELOPERS.md and docs/redact.md).
//!
//! Each input is recognised as `diagnose` recognises it; a text input is rewritten line by line
//! by [`crate::redact::file`] (JSON documents keep their nesting across lines), a database by
//! [`crate::formats::opencode::redact`], a folder file by file into a mirror of it. Every file is
//! written to a scratch file in the output's folder and renamed into place; the inputs are only
//! read.

use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::core::{ExitStatus, Format, RewindError};
use crate::formats::recognize;
use crate::formats::redact::{Rewrite, rewrite, rewrite_folder, rewrite_unclaimed};
use crate::ingest::DetectError;
use crate::redact::file::redact_stream;
use crate::redact::{Options, Redactor};
use crate::text::InputText;

#[derive(Debug, clap::Args)]
#[command(after_long_help = AFTER_HELP)]
pub struct Args {
    /// Files or folders to redact: agent logs, SSE captures, HTTP recordings, HAR files,
    /// OpenCode/Kilo databases, storage folders and exports, Claude Code transcripts, Codex
    /// rollouts.
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,

    /// Where to write: a file for one input file, a folder for a folder or several inputs
    /// (each input is written under its own name).
    #[arg(
        long,
        short = 'o',
        value_name = "OUTPUT",
        required_unless_present = "dry_run"
    )]
    pub output: Option<PathBuf>,

    /// List what would be replaced, and where (never the secret itself); write nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Overwrite outputs that exist.
    #[arg(long)]
    pub force: bool,

    /// Also replace what this regular expression matches (repeatable; a group named `s`, as in
    /// `key=(?P<s>\w+)`, narrows the secret to that group).
    #[arg(long, value_name = "REGEX")]
    pub pattern: Vec<String>,

    /// Leave alone a candidate this regular expression matches (repeatable), e.g.
    /// `--keep '@example\.com$'`.
    #[arg(long, value_name = "REGEX")]
    pub keep: Vec<String>,

    /// Keep home folders (`/home/NAME`, `/Users/NAME`, `$HOME`) as they are instead of `~`.
    #[arg(long)]
    pub keep_home: bool,

    /// Read the inputs as this kind instead of recognising it from their content.
    #[arg(long, value_enum, value_name = "KIND")]
    pub input: Option<Format>,
}

const AFTER_HELP: &str = "\
Found by pattern: Anthropic, OpenAI, OpenRouter, Google, Groq, xAI, Hugging Face, Stripe and npm
keys, GitHub (ghp_, gho_, github_pat_…), GitLab (glpat-) and Slack (xox?-) tokens, AWS access
keys and the secret keys beside them, JWTs, bearer tokens, private key blocks, passwords in URLs,
e-mail addresses, `password=…`/`api_key: …` in plain text. By position: values of authorization, cookie and *api-key headers and members,
members named *token, *password, *secret, every value of an env map, home folders (→ ~).
Each secret becomes [REDACTED:KIND:N], the same secret the same placeholder in every file of the
run. Member names, ids and times are never changed, so `rewind diagnose` finds the same things
on the copy. See docs/redact.md.";

/// One file (or database) to write.
struct Job {
    input: PathBuf,
    rewrite: Rewrite,
    /// Where it goes (unused in a dry run).
    output: PathBuf,
    /// How it is named in the listing.
    label: String,
}

pub fn run(args: Args) -> Result<ExitStatus, RewindError> {
    let options = Options {
        patterns: args.pattern.clone(),
        keep: args.keep.clone(),
        home: !args.keep_home,
    };
    let mut redactor = Redactor::new(&options).map_err(|e| RewindError::Usage(e.to_string()))?;
    if args.dry_run {
        redactor.record_hits();
    }
    let (jobs, homes) = plan(&args)?;
    let mut out = super::stdout();
    let mut written = 0usize;
    for job in &jobs {
        if args.dry_run {
            redact_one(&mut redactor, job, None)?;
            for hit in redactor.take_hits() {
                let file = InputText::from(&hit.place.file).for_terminal();
                let at = InputText::from(&hit.place.at).for_terminal();
                let place = if at.starts_with(|c: char| c.is_ascii_digit()) {
                    format!("{file}:{at}")
                } else {
                    format!("{file} ({at})")
                };
                writeln!(out, "{place}: {} → {}", hit.kind, hit.placeholder)?;
            }
        } else {
            redact_one(&mut redactor, job, Some(args.force))?;
            written += 1;
        }
    }
    if !args.dry_run {
        // What a folder's format needs once its files are written (a Codex home's cursors).
        for (format, input, target) in &homes {
            crate::formats::redact::finish_folder(*format, input, target)
                .map_err(|why| RewindError::Usage(format!("`{}`: {why}", shown(target))))?;
        }
    }
    let total: usize = redactor.counts().values().sum();
    if args.dry_run {
        writeln!(
            out,
            "dry run: {total} replacement{} ({} distinct secret{}) in {} file{}; nothing written",
            plural(total),
            redactor.distinct(),
            plural(redactor.distinct()),
            jobs.len(),
            plural(jobs.len())
        )?;
    } else {
        let to = args
            .output
            .as_deref()
            .map(|o| InputText::from(&o.display().to_string()).for_terminal())
            .unwrap_or_default();
        writeln!(
            out,
            "redacted: {total} replacement{} ({} distinct secret{}) in {written} file{}, written to {to}",
            plural(total),
            redactor.distinct(),
            plural(redactor.distinct()),
            plural(written)
        )?;
    }
    for (kind, n) in redactor.counts() {
        writeln!(out, "  {kind:<20} {n}")?;
    }
    out.flush()?;
    Ok(ExitStatus::Clean)
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn shown(path: &Path) -> String {
    InputText::from(&path.display().to_string()).for_terminal()
}

/// Recognises `path` (a file or a folder) without quoting its content.
fn recognise(path: &Path, forced: Option<Format>) -> Result<Format, RewindError> {
    if let Some(f) = forced {
        return Ok(f);
    }
    match recognize::detect(path) {
        Ok(f) => Ok(f),
        // The usual message quotes the file's first words, which may be a secret.
        Err(DetectError::Unknown { path, .. }) => Err(RewindError::Usage(format!(
            "cannot tell what `{}` is: no format rewind reads claims it (agent logs, stream captures, HTTP recordings, HAR, OpenCode stores, Claude Code and Codex transcripts); if you know what it is, say so with `--input KIND`; nothing written",
            shown(&path)
        ))),
        Err(e) => Err(e.into()),
    }
}

/// The files to write, every refusal made before anything is written.
/// The files to redact, and the folders among the inputs (format, input, copy).
type Plan = (Vec<Job>, Vec<(Option<Format>, PathBuf, PathBuf)>);

fn plan(args: &Args) -> Result<Plan, RewindError> {
    for input in &args.inputs {
        if crate::ingest::input::is_stdin(input) {
            return Err(RewindError::Usage(
                "rewind redact reads files, not standard input: save it to a file first".to_owned(),
            ));
        }
    }
    let several = args.inputs.len() > 1;
    let output = args.output.clone().unwrap_or_default();
    let mut jobs = Vec::new();
    let mut homes = Vec::new();
    let mut names = std::collections::HashSet::new();
    for input in &args.inputs {
        let meta = std::fs::metadata(input).map_err(|source| DetectError::Io {
            path: input.clone(),
            source,
        })?;
        let name = input
            .file_name()
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("input"));
        if several && !names.insert(name.clone()) {
            return Err(RewindError::Usage(format!(
                "two inputs are named `{}`: their copies would take the same place in `{}`; redact them in two runs",
                shown(&name),
                shown(&output)
            )));
        }
        let target = if several || (!meta.is_dir() && output.is_dir()) {
            output.join(&name)
        } else {
            output.clone()
        };
        if !args.dry_run {
            refuse_same(input, &target)?;
        }
        if meta.is_dir() {
            let format = recognize::detect(input).ok();
            homes.push((format, input.clone(), target.clone()));
            folder_jobs(input, format, &target, args, &mut jobs)?;
        } else {
            let format = recognise(input, args.input)?;
            let rewrite = rewrite(format, input).map_err(|why| {
                RewindError::Usage(format!("`{}` is {why}; nothing written", shown(input)))
            })?;
            jobs.push(Job {
                input: input.clone(),
                rewrite,
                output: target,
                label: shown(input),
            });
        }
    }
    if !args.dry_run && !args.force {
        for job in &jobs {
            if job.output.exists() {
                return Err(RewindError::Usage(format!(
                    "`{}` exists: rewind redact does not overwrite without `--force`; nothing written",
                    shown(&job.output)
                )));
            }
        }
    }
    Ok((jobs, homes))
}

/// The output must not be the input, nor lie inside an input folder.
fn refuse_same(input: &Path, target: &Path) -> Result<(), RewindError> {
    let Ok(input) = input.canonicalize() else {
        return Ok(());
    };
    // The target may not exist yet: compare its nearest existing ancestor, then the rest.
    let mut existing = target.to_path_buf();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.file_name(), existing.parent()) {
            (Some(n), Some(p)) => {
                rest.push(n.to_owned());
                existing = if p.as_os_str().is_empty() {
                    PathBuf::from(".")
                } else {
                    p.to_path_buf()
                };
            }
            _ => return Ok(()),
        }
    }
    let Ok(mut resolved) = existing.canonicalize() else {
        return Ok(());
    };
    for n in rest.iter().rev() {
        resolved.push(n);
    }
    if resolved == input || (input.is_dir() && resolved.starts_with(&input)) {
        return Err(RewindError::Usage(format!(
            "the output `{}` is the input or inside it: rewind redact never writes over or into what it reads; choose another place",
            shown(target)
        )));
    }
    Ok(())
}

/// Every file under the folder `dir`, mirrored under `target`: a storage folder's files are
/// JSON documents; in any other folder, each file is recognised and one no format claims is
/// left out unless it is JSON (a subagent's meta file).
fn folder_jobs(
    dir: &Path,
    format: Option<Format>,
    target: &Path,
    args: &Args,
    jobs: &mut Vec<Job>,
) -> Result<(), RewindError> {
    let whole = rewrite_folder(format);
    let mut stack = vec![PathBuf::new()];
    let mut files = Vec::new();
    while let Some(rel) = stack.pop() {
        let here = dir.join(&rel);
        let mut entries: Vec<_> = std::fs::read_dir(&here)
            .map_err(|source| DetectError::Io {
                path: here.clone(),
                source,
            })?
            .flatten()
            .collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries.into_iter().rev() {
            let Ok(kind) = e.file_type() else { continue };
            let sub = rel.join(e.file_name());
            if kind.is_dir() {
                stack.push(sub);
            } else if kind.is_file() {
                files.push(sub);
            }
        }
    }
    files.sort();
    for rel in files {
        let input = dir.join(&rel);
        let how = match whole {
            Some(how) => Some(how),
            None => match recognise(&input, args.input) {
                Ok(f) => rewrite(f, &input).ok(),
                Err(_) => rewrite_unclaimed(&input),
            },
        };
        let label = shown(&input);
        let Some(rewrite) = how else {
            crate::commands::err_line(&format!(
                "note: `{label}` left out: no format rewind reads claims it"
            ));
            continue;
        };
        jobs.push(Job {
            input,
            rewrite,
            output: target.join(&rel),
            label,
        });
    }
    Ok(())
}

/// Redacts one job: a dry run when `force` is `None`.
fn redact_one(r: &mut Redactor, job: &Job, force: Option<bool>) -> Result<(), RewindError> {
    let db_err = |e: crate::formats::opencode::db::DbError| RewindError::Db {
        path: job.input.clone(),
        source: Box::new(e),
    };
    let Some(force) = force else {
        let Rewrite::Text(layout) = job.rewrite else {
            return crate::formats::opencode::redact::dry_run(&job.input, r, &job.label)
                .map_err(db_err);
        };
        let input = open(&job.input)?;
        redact_stream(r, &job.label, layout, input, &mut std::io::sink())
            .map_err(|e| read_err(&job.input, e))?;
        return Ok(());
    };
    let dir = match job.output.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(|e| write_err(&job.output, e))?;
    let Rewrite::Text(layout) = job.rewrite else {
        let scratch = tempfile::Builder::new()
            .prefix(".rewind-redact-")
            .tempdir_in(&dir)
            .map_err(|e| write_err(&job.output, e))?;
        let db = scratch.path().join("redacted.db");
        crate::formats::opencode::redact::redact(&job.input, &db, r, &job.label).map_err(db_err)?;
        return place(&db, &job.output, force);
    };
    let input = open(&job.input)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".rewind-redact-")
        .tempfile_in(&dir)
        .map_err(|e| write_err(&job.output, e))?;
    {
        let mut w = BufWriter::new(tmp.as_file_mut());
        redact_stream(r, &job.label, layout, input, &mut w).map_err(|e| {
            if e.kind() == std::io::ErrorKind::InvalidData {
                read_err(&job.input, e)
            } else {
                write_err(&job.output, e)
            }
        })?;
        w.flush().map_err(|e| write_err(&job.output, e))?;
    }
    tmp.as_file()
        .sync_all()
        .map_err(|e| write_err(&job.output, e))?;
    let result = if force {
        tmp.persist(&job.output)
    } else {
        tmp.persist_noclobber(&job.output)
    };
    result.map_err(|e| write_err(&job.output, e.error))?;
    Ok(())
}

/// Moves the finished file `from` to `to`.
fn place(from: &Path, to: &Path, force: bool) -> Result<(), RewindError> {
    if !force && to.exists() {
        return Err(RewindError::Usage(format!(
            "`{}` exists: rewind redact does not overwrite without `--force`",
            shown(to)
        )));
    }
    std::fs::rename(from, to).map_err(|e| write_err(to, e))
}

fn open(path: &Path) -> Result<BufReader<std::fs::File>, RewindError> {
    std::fs::File::open(path)
        .map(|f| BufReader::with_capacity(1 << 16, f))
        .map_err(|e| read_err(path, e))
}

fn read_err(path: &Path, e: std::io::Error) -> RewindError {
    RewindError::Usage(format!("cannot read `{}`: {e}", shown(path)))
}

fn write_err(path: &Path, e: std::io::Error) -> RewindError {
    RewindError::Usage(format!(
        "cannot write `{}`: {e}; the input is unchanged",
        shown(path)
    ))
}
