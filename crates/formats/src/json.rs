//! Strict JSON reading: an object that names the same key twice is an error.
//!
//! `serde_json` keeps the last of two equal keys without a word, so `{"k": 1, "k": 2}` reads
//! as `{"k": 2}` and half of what the author wrote is silently lost. Every JSON input of
//! veredicto goes through this module instead: [`value_from_str`] builds a [`Value`] in one
//! pass and refuses a repeated key; [`from_str`] does the same check before deserializing a
//! typed value. The error is serde_json's, so it carries the line and column of the repeated
//! key; nesting deeper than 128 levels is refused as serde_json refuses it.

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess};
use serde::Deserializer;
use serde_json::{Map, Value};
use veredicto_core::redact;

/// The message of a repeated key (serde_json appends ` at line L column C`).
fn duplicate(key: &str) -> String {
    format!("duplicate key `{}` in an object", redact::short(key))
}

/// Parses `text` as one JSON value, refusing an object with a repeated key.
pub fn value_from_str(text: &str) -> Result<Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let v = StrictValue.deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

/// Deserializes `text` as a `T` after checking that no object in it repeats a key.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, serde_json::Error> {
    check_unique_keys(text)?;
    serde_json::from_str(text)
}

/// [`from_str`] for bytes (which must be UTF-8 JSON).
pub fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    UniqueKeys.deserialize(&mut de)?;
    de.end()?;
    serde_json::from_slice(bytes)
}

/// Checks that no object in the JSON `text` repeats a key (without building the value).
pub fn check_unique_keys(text: &str) -> Result<(), serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    UniqueKeys.deserialize(&mut de)?;
    de.end()
}

/// Builds a [`Value`], refusing repeated keys.
pub(crate) struct StrictValue;

impl<'de> DeserializeSeed<'de> for StrictValue {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> de::Visitor<'de> for StrictValue {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(v) = seq.next_element_seed(StrictValue)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(de::Error::custom(duplicate(&key)));
            }
            let v = map.next_value_seed(StrictValue)?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

/// Walks a JSON document, keeping only each object's keys, refusing repeated ones.
struct UniqueKeys;

impl<'de> DeserializeSeed<'de> for UniqueKeys {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> de::Visitor<'de> for UniqueKeys {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
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
    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(UniqueKeys)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen: HashSet<String> = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if seen.contains(&key) {
                return Err(de::Error::custom(duplicate(&key)));
            }
            seen.insert(key);
            map.next_value_seed(UniqueKeys)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_json_keys_are_an_error_naming_key_and_line() {
        let text = "{\"a\": 1,\n \"b\": {\"x\": 1,\n \"x\": 2}}";
        let e = value_from_str(text).unwrap_err().to_string();
        assert!(
            e.contains("duplicate key `x`") && e.contains("line 3"),
            "{e}"
        );
        let e = check_unique_keys(text).unwrap_err().to_string();
        assert!(
            e.contains("duplicate key `x`") && e.contains("line 3"),
            "{e}"
        );
        let e = from_str::<Value>("[{\"k\":1,\"k\":1}]").unwrap_err();
        assert!(e.to_string().contains("`k`"), "{e}");
        assert!(from_slice::<Value>(b"{\"k\":1,\"k\":1}").is_err());
    }

    /// `{"id": "q1", "id": "q2"}` in a golden set or corpus read as `q2` without a word.
    #[test]
    fn duplicate_keys_in_jsonl_input_name_file_line_and_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("golden.jsonl");
        std::fs::write(
            &path,
            "{\"id\": \"q0\"}\n{\"id\": \"q1\", \"query\": \"a\", \"id\": \"q2\"}\n",
        )
        .unwrap();
        let e = crate::jsonl::read_objects(&path).err().unwrap().to_string();
        assert!(e.contains("golden.jsonl:2:"), "{e}");
        assert!(e.contains("duplicate key `id`"), "{e}");
    }

    #[test]
    fn strict_values_equal_serde_json_values() {
        for t in [
            "{\"a\":[1,-2,3.5,true,null,\"s\"],\"b\":{\"c\":{}},\"d\":18446744073709551615}",
            "[]",
            "\"x\"",
            "{\"k\":1,\"K\":2}",
        ] {
            assert_eq!(
                value_from_str(t).unwrap(),
                serde_json::from_str::<Value>(t).unwrap()
            );
        }
        assert!(value_from_str("{} x").is_err());
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(value_from_str(&deep).is_err());
        assert!(check_unique_keys(&deep).is_err());
    }
}
