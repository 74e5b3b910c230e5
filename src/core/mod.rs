//! The bottom of the crate: the small types every layer above names (the kinds of input, the
//! exit status contract). Nothing here uses any other module of the crate but `source` and
//! `text`.

mod error;
mod exit;
mod format;
mod order;

pub use error::{DetectError, IngestError, MAX_LINE, RewindError};
pub use exit::ExitStatus;
pub(crate) use exit::{exits_after, set_exits_after};
pub use format::Format;
pub use order::in_order;
