//! The typed-parse floor of agent-log diagnosis: what any reader of a compact NDJSON agent log
//! must at least do. It reads the file line by line and parses each line with serde_json into a
//! struct holding only the fields a diagnosis needs (the record's `type`, `timestamp`,
//! `sessionID`, the part's `id`, `type` and `state.status`, and whether there is an `error`),
//! skipping everything else; then prints how many records it saw of each kind, so the work
//! cannot be optimised away. `benches/agent_log.sh` times `rewind diagnose` against it.
//!
//!     cargo run --profile dist --example agent_log_floor -- FILE.jsonl

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::io::{BufRead, BufReader};

use serde::Deserialize;
use serde::de::{IgnoredAny, Visitor};

#[derive(Deserialize)]
struct Record<'a> {
    #[serde(rename = "type", borrow)]
    ty: Option<Cow<'a, str>>,
    timestamp: Option<Stamp>,
    #[serde(rename = "sessionID", borrow)]
    session_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    part: Option<PartFields<'a>>,
    error: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct PartFields<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(rename = "type", borrow)]
    ty: Option<Cow<'a, str>>,
    #[serde(borrow)]
    state: Option<State<'a>>,
}

#[derive(Deserialize)]
struct State<'a> {
    #[serde(borrow)]
    status: Option<Cow<'a, str>>,
}

/// A record's time: an ISO string (logger entries) or epoch milliseconds (part events).
enum Stamp {
    Text,
    Millis(u64),
}

impl<'de> Deserialize<'de> for Stamp {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Stamp;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a timestamp")
            }
            fn visit_str<E>(self, _: &str) -> Result<Stamp, E> {
                Ok(Stamp::Text)
            }
            fn visit_u64<E>(self, v: u64) -> Result<Stamp, E> {
                Ok(Stamp::Millis(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Stamp, E> {
                Ok(Stamp::Millis(v.max(0) as u64))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Stamp, E> {
                Ok(Stamp::Millis(v as u64))
            }
        }
        d.deserialize_any(V)
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: agent_log_floor FILE")?;
    let mut input = BufReader::with_capacity(1 << 20, std::fs::File::open(path)?);
    let mut line = Vec::new();
    let mut kinds: BTreeMap<String, u64> = BTreeMap::new();
    let (mut bad, mut with_session, mut with_status, mut errors, mut stamped) = (0, 0, 0, 0, 0);
    let mut part_ids = 0usize;
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        match serde_json::from_slice::<Record<'_>>(&line) {
            Ok(r) => {
                let ty = r.ty.unwrap_or_default();
                match kinds.get_mut(ty.as_ref()) {
                    Some(n) => *n += 1,
                    None => {
                        kinds.insert(ty.into_owned(), 1);
                    }
                }
                with_session += u64::from(r.session_id.is_some());
                stamped += match r.timestamp {
                    Some(Stamp::Millis(ms)) => ms & 1,
                    Some(Stamp::Text) => 1,
                    None => 0,
                };
                errors += u64::from(r.error.is_some());
                if let Some(p) = r.part {
                    part_ids += p.id.map_or(0, |s| s.len()) + p.ty.map_or(0, |s| s.len());
                    with_status += u64::from(p.state.and_then(|s| s.status).is_some());
                }
            }
            Err(_) => bad += 1,
        }
    }
    println!(
        "{kinds:?} session {with_session} timestamp {stamped} status {with_status} error {errors} undecodable {bad} ({part_ids})"
    );
    Ok(())
}
