//! What every decoder shares: the `[DONE]` sentinel, and the parse of one payload into its
//! protocol's typed, borrowed event envelope.
//!
//! An envelope is a `#[serde(tag = "type")]` enum whose variants borrow their strings from the
//! payload, with a catch-all for the event types the decoder does not read. The fields a
//! protocol's schema checks are typed strictly, the others leniently (the way
//! `Value::as_str` / `Value::as_u64` read them: another JSON type reads as absent), so an event
//! parses into its envelope exactly when it passes the schema. Only an event that does not — or
//! that repeats a key — is parsed again as a [`Value`]: validated against the schema of its type
//! so the rejection names the field, then read from that value.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::protocol::Rejected;
use crate::model::schema::{self, Ty};

/// A protocol's event envelope.
pub trait Envelope<'a>: Deserialize<'a> {
    /// The catch-all: an event of a type the decoder does not read.
    fn other() -> Self;
    /// The schema an event of type `ty` is validated against.
    fn shape(ty: &str) -> Option<&'static Ty>;
    /// Whether this is the catch-all.
    fn is_other(&self) -> bool;
    /// Whether the schema also checks types the envelope does not read (`tool-*`): an event
    /// of such a type is then read as a value too, to be validated.
    const CHECKS_OTHER: bool = false;
}

/// One payload.
pub enum Parsed<E> {
    /// The `[DONE]` sentinel.
    Done,
    Event(E),
}

/// The `[DONE]` sentinel that ends OpenAI-style streams (and that the other protocols' SDKs
/// accept too).
pub fn is_done(data: &str) -> bool {
    data.trim() == "[DONE]"
}

/// Parses one payload: `[DONE]`, or an event of the envelope `E`. `spare` holds the value of a
/// payload that took the slow path, which the event then borrows from.
pub fn parse<'a, E: Envelope<'a>>(
    data: &'a str,
    spare: &'a mut Option<Value>,
) -> Result<Parsed<E>, Rejected> {
    if is_done(data) {
        return Ok(Parsed::Done);
    }
    if data.trim_start().starts_with('{')
        && let Ok(event) = serde_json::from_str::<E>(data)
        && !(E::CHECKS_OTHER && event.is_other())
    {
        return Ok(Parsed::Event(event));
    }
    // Not JSON, not an object, a field of the wrong type, a repeated key: the value decides.
    let v: &'a Value = spare.insert(serde_json::from_str(data).map_err(Rejected::Json)?);
    if let Some(shape) = v.get("type").and_then(Value::as_str).and_then(E::shape) {
        let issues = schema::validate(v, shape);
        if !issues.is_empty() {
            return Err(Rejected::Schema(issues));
        }
    }
    match v.is_object().then(|| E::deserialize(v)) {
        Some(Ok(event)) => Ok(Parsed::Event(event)),
        _ => Ok(Parsed::Event(E::other())),
    }
}

/// The `type` of an event, read the way `Value::as_str` reads it ("" when it has none): for the
/// catch-all, whose type the envelope does not keep.
pub fn type_name(data: &str) -> String {
    #[derive(serde::Deserialize)]
    struct Head<'a> {
        #[serde(borrow, default, rename = "type")]
        ty: Str<'a>,
    }
    match serde_json::from_str::<Head<'_>>(data) {
        Ok(h) => h.ty.0.map(Cow::into_owned).unwrap_or_default(),
        Err(_) => serde_json::from_str::<Value>(data)
            .ok()
            .and_then(|v| v.get("type").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_default(),
    }
}

/// Visitor methods that read the JSON types listed as the given (absent) value.
macro_rules! absent {
    ($v:expr; $($kind:ident),*) => { $( absent!(@$kind $v); )* };
    (@str $v:expr) => {
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> { Ok($v) }
    };
    (@bool $v:expr) => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> { Ok($v) }
    };
    (@int $v:expr) => {
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> { Ok($v) }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> { Ok($v) }
    };
    (@u64 $v:expr) => {
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> { Ok($v) }
    };
    (@null $v:expr) => {
        fn visit_unit<E>(self) -> Result<Self::Value, E> { Ok($v) }
        fn visit_none<E>(self) -> Result<Self::Value, E> { Ok($v) }
    };
    (@map $v:expr) => {
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok($v)
        }
    };
    (@seq $v:expr) => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok($v)
        }
    };
}

/// A lenient string field: a string, or absent for any other JSON value (`Value::as_str`).
#[derive(Clone, Debug, Default)]
pub struct Str<'a>(pub Option<Cow<'a, str>>);

impl<'a> Str<'a> {
    pub fn get(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Str<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(Str(Some(Cow::Borrowed(s))))
            }
            fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Str(Some(Cow::Owned(s.to_owned()))))
            }
            fn visit_string<E>(self, s: String) -> Result<Self::Value, E> {
                Ok(Str(Some(Cow::Owned(s))))
            }
            absent!(Str(None); bool, int, u64, null, map, seq);
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// A lenient unsigned integer: a non-negative integer, or absent for any other JSON value
/// (`Value::as_u64`).
#[derive(Clone, Copy, Debug, Default)]
pub struct U64(pub Option<u64>);

impl<'de> Deserialize<'de> for U64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = U64;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_u64<E>(self, n: u64) -> Result<Self::Value, E> {
                Ok(U64(Some(n)))
            }
            absent!(U64(None); str, bool, int, null, map, seq);
        }
        d.deserialize_any(V)
    }
}

/// A strict number (`Ty::Num`): any JSON number; read as `Value::as_u64` reads it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Num(pub Option<u64>);

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Num;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number")
            }
            fn visit_u64<E>(self, n: u64) -> Result<Self::Value, E> {
                Ok(Num(Some(n)))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Num(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Num(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// A lenient boolean: `true` only for the JSON `true`.
#[derive(Clone, Copy, Debug, Default)]
pub struct True(pub bool);

impl<'de> Deserialize<'de> for True {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = True;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E>(self, b: bool) -> Result<Self::Value, E> {
                Ok(True(b))
            }
            absent!(True(false); str, int, u64, null, map, seq);
        }
        d.deserialize_any(V)
    }
}

/// A strict object (`Ty::Obj`): a JSON object read as `T` (never an array read by position).
#[derive(Clone, Debug)]
pub struct Obj<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Obj<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(Obj)
            }
        }
        d.deserialize_map(V(PhantomData))
    }
}

/// A lenient object: a JSON object read as `T` (whose fields are lenient too), or absent for
/// any other JSON value.
#[derive(Clone, Debug)]
pub struct Loose<T>(pub Option<T>);

impl<T> Default for Loose<T> {
    fn default() -> Self {
        Loose(None)
    }
}

impl<T> Loose<T> {
    pub fn get(&self) -> Option<&T> {
        self.0.as_ref()
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Loose<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Loose<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(|t| Loose(Some(t)))
            }
            absent!(Loose(None); str, bool, int, u64, null, seq);
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// A field kept as a JSON value, `null` included (for the fields rendered as JSON text).
#[derive(Clone, Debug, Default)]
pub struct Raw(pub Option<Value>);

impl<'de> Deserialize<'de> for Raw {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Value::deserialize(d).map(|v| Raw(Some(v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::schema::{opt, req};

    static SHAPE: Ty = Ty::Obj(&[req("id", Ty::Str), opt("n", Ty::Num)]);

    #[derive(serde::Deserialize)]
    #[serde(tag = "type")]
    enum Ev<'a> {
        #[serde(rename = "a")]
        A {
            #[serde(borrow)]
            id: Cow<'a, str>,
            #[serde(default)]
            n: Num,
            #[serde(borrow, default)]
            s: Str<'a>,
            #[serde(default)]
            raw: Raw,
        },
        #[serde(other)]
        Other,
    }

    impl<'a> Envelope<'a> for Ev<'a> {
        fn other() -> Self {
            Ev::Other
        }
        fn is_other(&self) -> bool {
            matches!(self, Ev::Other)
        }
        fn shape(ty: &str) -> Option<&'static Ty> {
            (ty == "a").then_some(&SHAPE)
        }
    }

    fn run(data: &str) -> String {
        let mut spare = None;
        match parse::<Ev<'_>>(data, &mut spare) {
            Ok(Parsed::Done) => "done".into(),
            Ok(Parsed::Event(Ev::A { id, n, s, raw })) => {
                let borrowed = matches!(id, Cow::Borrowed(_));
                format!("a {id} {:?} {:?} {:?} {borrowed}", n.0, s.get(), raw.0)
            }
            Ok(Parsed::Event(Ev::Other)) => "other".into(),
            Err(Rejected::Json(e)) => format!("json {e}"),
            Err(Rejected::Schema(i)) => format!("schema {}", i[0]),
        }
    }

    #[test]
    fn strict_lenient_and_slow_paths() {
        assert_eq!(run(" [DONE] "), "done");
        assert_eq!(
            run(r#"{"type":"a","id":"x","n":3,"s":"t","raw":null}"#),
            "a x Some(3) Some(\"t\") Some(Null) true"
        );
        // Lenient fields read other JSON types as absent; strict ones are schema issues.
        assert_eq!(
            run(r#"{"type":"a","id":"x","n":-1.5,"s":{"k":[1]}}"#),
            "a x None None None true"
        );
        assert!(run(r#"{"type":"a","id":"x","n":null}"#).starts_with("schema `n`"));
        assert!(run(r#"{"type":"a","id":7}"#).starts_with("schema `id`"));
        assert!(run(r#"{"type":"a"}"#).starts_with("schema `id`"));
        // A repeated key: the last one, as a value reads it.
        assert_eq!(
            run(r#"{"type":"a","id":"x","id":"y"}"#),
            "a y None None None true"
        );
        assert_eq!(run(r#"{"type":"b","id":1}"#), "other");
        assert_eq!(run(r#"{"type":1}"#), "other");
        assert_eq!(run(r#"["a","x"]"#), "other");
        assert_eq!(run("7"), "other");
        assert!(run(r#"{"type":"a","#).starts_with("json EOF"));
        assert_eq!(type_name(r#"{"x":{"type":"in"},"type":"out"}"#), "out");
        assert_eq!(type_name(r#"{"type":2}"#), "");
    }
}
