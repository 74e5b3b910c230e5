//! The JSON kernel every format reads through: locating values in JSON text without building
//! them (`scan`), walking a document as a stream of events (`stream`), decoding a string's
//! escapes with a map back to the raw bytes (`string`), a position in a document (`position`),
//! reading JSON lines with their byte spans (`lines`), and reading a value while standing in for
//! the parts nobody reads (`log_value`).

pub mod lines;
pub mod locator;
pub mod log_value;
pub mod position;
pub mod scan;
pub mod stream;
pub mod string;
pub mod value;
