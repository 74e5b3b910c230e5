//! One module per subcommand, each with its `Args` and a `run`.

pub mod check;
pub mod diagnose;
pub mod explain;
pub mod repair;
pub mod replay;
pub mod rules;
pub mod sessions;

use std::io::{BufWriter, Stdout};

use crate::error::RewindError;
use crate::report::github::GithubPrinter;
use crate::report::html::HtmlPrinter;
use crate::report::human::{HumanPrinter, Summary};
use crate::report::json::JsonPrinter;
use crate::report::jsonl::JsonlPrinter;
use crate::report::junit::JunitPrinter;
use crate::report::sarif::SarifPrinter;
use crate::report::{OutputFormat, Printer};

/// Output formats of the commands that print a table or a document.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum HumanOrJson {
    Human,
    Json,
}

/// Prints an error the way every command does: one line on standard error.
pub fn print_error(err: &RewindError, color: bool) {
    let label = if color {
        "\u{1b}[1;31merror\u{1b}[0m"
    } else {
        "error"
    };
    let text = crate::report::snippet::escape(&err.to_string(), false);
    eprintln!("{label}: {text}");
}

fn stdout() -> BufWriter<Stdout> {
    BufWriter::new(std::io::stdout())
}

/// The printer for an output format, on standard output.
pub fn make_printer(
    format: OutputFormat,
    color: bool,
    summary: Summary,
    help_uri_base: Option<String>,
) -> Box<dyn Printer> {
    match format {
        OutputFormat::Human => Box::new(HumanPrinter::new(stdout(), color, summary)),
        OutputFormat::Json => Box::new(JsonPrinter::new(stdout())),
        OutputFormat::Jsonl => Box::new(JsonlPrinter::new(stdout())),
        OutputFormat::Sarif => Box::new(SarifPrinter::new(stdout(), help_uri_base)),
        OutputFormat::Github => Box::new(GithubPrinter::new(stdout())),
        OutputFormat::Junit => Box::new(JunitPrinter::new(stdout())),
        OutputFormat::Html => Box::new(HtmlPrinter::new(stdout())),
    }
}
