//! The bottom of the crate: the small types every layer above names (the kinds of input, the
//! exit status contract). Nothing here uses any other module of the crate but `source` and
//! `text`.

mod error;
mod exit;
mod format;
mod order;

pub use error::{DetectError, IngestError, MAX_LINE, MAX_MESSAGE, RewindError};
pub use exit::ExitStatus;
pub(crate) use exit::{exits_after, set_exits_after};
pub use format::Format;
pub use order::in_order;

/// Whether `path` names a copy rewind itself made next to an input: a repair's backup
/// (`<file>.rewind-backup-<time>`, possibly still `.partial`) or its temporary file
/// (`<file>.rewind-tmp-<pid>`). Walking a folder, these are not recordings of their own.
pub fn is_rewind_copy(path: &std::path::Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.contains(".rewind-backup-") || n.contains(".rewind-tmp-"))
}
