//! The wire protocols every format shares: SSE framing (`sse`), a capture's payloads and their
//! way back to the file's bytes (`capture`), the providers' and UIs' stream decoders with the
//! agents' stream processors (`stream`), request bodies as the model's input (`request`), and
//! the providers' rules on that input with their verbatim errors (`provider`).

pub mod array;
pub mod capture;
pub mod eventstream;
pub mod provider;
pub mod relay;
pub mod request;
pub mod sse;
pub mod stream;
