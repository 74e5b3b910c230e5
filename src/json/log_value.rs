//! Reading an agent log's JSON object into a `Value` without building what the replay of a part
//! event drops unread.
//!
//! A part event's `part.state.output`, `part.state.input`, `part.state.raw`,
//! `part.state.metadata`, `part.state.attachments` and `part.metadata` are most of a log's bytes
//! (what the tools printed, read and wrote). The replay validates them against the schema, which
//! only asks for their JSON type, and then removes them (`slim`), keeping of the input only
//! whether it is empty. [`parse`] builds the value with a stand-in of the same JSON type for each
//! of them: an empty string, an empty array, an empty object, or, for an object with members,
//! one member (`null`) under its first key. Numbers, booleans and `null` are kept as they are, so
//! a value of the wrong type is reported as it was written.
//!
//! The values in the stand-ins' places are walked with [`Discard`], which refuses what building a
//! `Value` refuses, so [`parse`] fails exactly where `serde_json::from_str::<Value>` fails.
//!
//! serde_json's `&RawValue` would skip the heavy fields too, but it checks less than a `Value`
//! does: it takes a lone surrogate escape (`"\ud800"`) and a number out of `f64`'s range
//! (`1e400`), both of which a `Value` refuses. A record holding one would then be replayed where
//! it is now reported unreadable, so this seed keeps the refusals identical (see the test
//! `raw_value_accepts_what_a_value_refuses`).

use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::fmt;

/// Where in the object a value is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum At {
    /// The object itself.
    Top,
    /// `part`.
    Part,
    /// `part.state`.
    State,
    /// A value read whole.
    Whole,
    /// A value only the JSON type of which is kept.
    StandIn,
}

impl At {
    fn child(self, key: &str) -> At {
        match (self, key) {
            (At::Top, "part") => At::Part,
            (At::Part, "state") => At::State,
            (At::Part, "metadata") => At::StandIn,
            (At::State, "output" | "input" | "raw" | "metadata" | "attachments") => At::StandIn,
            _ => At::Whole,
        }
    }
}

/// `text` as a `Value`, the heavy fields of its `part` stood in for (see the module's doc).
pub(crate) fn parse(text: &str) -> serde_json::Result<Value> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = At::Top.deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

impl<'de> DeserializeSeed<'de> for At {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        match self {
            At::Whole => serde::Deserialize::deserialize(d),
            _ => d.deserialize_any(self),
        }
    }
}

impl<'de> Visitor<'de> for At {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(match self {
            At::StandIn => String::new(),
            _ => v.to_owned(),
        }))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(match self {
            At::StandIn => String::new(),
            _ => v,
        }))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        if self == At::StandIn {
            while seq.next_element_seed(Discard)?.is_some() {}
            return Ok(Value::Array(Vec::new()));
        }
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Value>()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        if self == At::StandIn {
            let mut out = Map::new();
            if let Some(key) = map.next_key::<String>()? {
                map.next_value_seed(Discard)?;
                out.insert(key, Value::Null);
            }
            while map.next_key_seed(Discard)?.is_some() {
                map.next_value_seed(Discard)?;
            }
            return Ok(Value::Object(out));
        }
        // A part event's object, part and state have a handful of members each: room for them
        // at once rather than growing the map twice.
        let mut out = Map::with_capacity(match self {
            At::Top | At::Part | At::State => 8,
            _ => 0,
        });
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(self.child(&key))?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

/// Walks a value and keeps nothing of it, refusing what building a `Value` refuses: unlike
/// `IgnoredAny` (which serde_json skips without decoding), it asks serde_json to decode every
/// string, number and nested value, without allocating for them.
#[derive(Clone, Copy)]
pub(crate) struct Discard;

impl<'de> DeserializeSeed<'de> for Discard {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::Deserialize<'de> for Discard {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Discard).map(|()| Discard)
    }
}

impl<'de> Visitor<'de> for Discard {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Discard)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_key_seed(Discard)?.is_some() {
            map.next_value_seed(Discard)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stands_in_for_the_heavy_fields_of_a_part_only() {
        let text = r#"{"type":"tool_use","metadata":{"a":1},"output":"kept",
            "part":{"id":"p","metadata":{"x":[1,2]},"state":{"status":"completed",
            "input":{"path":"/a","content":"long"},"output":"printed","raw":"r",
            "metadata":{},"attachments":[{"type":"file"}],"title":"t","error":"e",
            "time":{"start":1}}}}"#;
        assert_eq!(
            parse(text).ok(),
            Some(json!({"type":"tool_use","metadata":{"a":1},"output":"kept",
                "part":{"id":"p","metadata":{"x":null},"state":{"status":"completed",
                "input":{"path":null},"output":"","raw":"","metadata":{},"attachments":[],
                "title":"t","error":"e","time":{"start":1}}}}))
        );
    }

    #[test]
    fn wrong_types_are_kept_as_written() {
        let text = r#"{"part":{"state":{"input":7,"output":null,"metadata":true,"raw":1.5}}}"#;
        assert_eq!(parse(text).ok(), serde_json::from_str::<Value>(text).ok());
    }

    #[test]
    fn values_without_stand_ins_read_as_serde_json_reads_them() {
        for text in [
            r#"{"a":[1,-2,3.5,1e3,"x\ny",null,true,{"b":{}}],"part":"s"}"#,
            r#"{"part":{"state":"x","id":18446744073709551615}}"#,
            r#"[{"part":{"state":{"output":"o"}}}]"#,
            r#""just a string""#,
        ] {
            assert_eq!(
                parse(text).ok(),
                serde_json::from_str::<Value>(text).ok(),
                "{text}"
            );
        }
        assert!(parse(r#"{"a":1} x"#).is_err());
        assert!(parse(r#"{"a":"#).is_err());
    }

    /// Every one-byte mutation of a part event is accepted by [`parse`] exactly when serde_json
    /// accepts it as a `Value`, and refused with the same error.
    #[test]
    fn mutations_fail_where_a_value_fails() {
        let seed = r#"{"type":"tool_use","timestamp":1,"sessionID":"ses_1","part":{"id":"prt_1","metadata":{"a":[1,{"b":null}]},"type":"tool","callID":"c","tool":"bash","state":{"status":"completed","input":{"command":"ls \"a\"","n":-1.5e3},"output":"x\ny\u00e9","metadata":{"exit":0,"v":[true,false]},"title":"t","attachments":[{"k":"v"}],"time":{"start":1,"end":2}}}}"#;
        let mut checked = 0;
        for text in crate::text::one_byte_mutations(seed) {
            let ours = parse(&text).map(|_| ()).map_err(|e| e.to_string());
            let theirs = serde_json::from_str::<Value>(&text)
                .map(|_| ())
                .map_err(|e| e.to_string());
            assert_eq!(ours, theirs, "{text}");
            checked += 1;
        }
        assert!(checked > 1000);
    }

    /// Why the stand-ins are walked with [`Discard`] and not skipped as `&RawValue`s.
    #[test]
    fn raw_value_accepts_what_a_value_refuses() {
        for inner in [r#""\ud800""#, "1e400"] {
            let text = format!(r#"{{"part":{{"state":{{"output":{inner}}}}}}}"#);
            assert!(serde_json::from_str::<&serde_json::value::RawValue>(inner).is_ok());
            assert!(serde_json::from_str::<Value>(&text).is_err());
            assert!(parse(&text).is_err(), "{text}");
        }
    }

    #[test]
    fn stand_ins_refuse_what_a_value_refuses() {
        let nine = "9".repeat(400);
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        for inner in [
            r#""\ud800""#,
            "1e999",
            nine.as_str(),
            r#"{"k":"\ud800"}"#,
            "[1e400]",
            r#"{"\udc00":1}"#,
            r#""\x""#,
            deep.as_str(),
            r#""ok""#,
            "[1,2]",
        ] {
            for field in ["output", "input", "metadata", "attachments"] {
                let text = format!(r#"{{"part":{{"state":{{"{field}":{inner}}}}}}}"#);
                assert_eq!(
                    parse(&text).is_ok(),
                    serde_json::from_str::<Value>(&text).is_ok(),
                    "{text}"
                );
            }
        }
    }
}
