//! One module per subcommand, each with its `Args` and a `run`.

pub mod diagnose;
pub mod explain;
pub mod repair;
pub mod rules;
pub mod sessions;

use crate::error::RewindError;
use crate::report::human::HumanPrinter;

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

/// A human printer on standard output.
pub fn human_stdout(color: bool) -> HumanPrinter<std::io::BufWriter<std::io::Stdout>> {
    HumanPrinter::new(std::io::BufWriter::new(std::io::stdout()), color)
}
