//! The `_delta_log/_last_checkpoint` hint file.
//!
//! Spec: "Last Checkpoint File", "Last Checkpoint File Schema" and "JSON checksum". The file is
//! only a hint: a reader that finds it missing, unparsable, failing its checksum or pointing at a
//! checkpoint that does not exist falls back to listing the whole log (see `segment`).

use std::collections::BTreeMap;
use std::fmt;

use md5::{Digest, Md5};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

/// The parsed content of `_last_checkpoint`.
#[derive(Debug, Clone, PartialEq)]
pub struct LastCheckpointHint {
    /// Version of the checkpoint.
    pub version: u64,
    /// Number of actions in the checkpoint.
    pub size: Option<i64>,
    /// Number of parts of a multi-part checkpoint.
    pub parts: Option<u32>,
    /// Bytes of the checkpoint.
    pub size_in_bytes: Option<i64>,
    /// Number of add actions in the checkpoint.
    pub num_of_add_files: Option<i64>,
}

/// Why a `_last_checkpoint` file was not usable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HintError(pub String);

impl fmt::Display for HintError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A JSON value that keeps integer text exactly and rejects duplicate keys (rule 7 of
/// "JSON checksum": duplicate keys make the file invalid).
#[derive(Debug, Clone, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Number(String),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Json;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
                Ok(Json::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
                Ok(Json::Number(v.to_string()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
                Ok(Json::Number(v.to_string()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Json, E> {
                Ok(Json::Number(v.to_string()))
            }
            fn visit_str<E>(self, v: &str) -> Result<Json, E> {
                Ok(Json::String(v.to_string()))
            }
            fn visit_string<E>(self, v: String) -> Result<Json, E> {
                Ok(Json::String(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
                let mut out = Vec::new();
                while let Some(v) = seq.next_element()? {
                    out.push(v);
                }
                Ok(Json::Array(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
                let mut out: Vec<(String, Json)> = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, Json>()? {
                    if out.iter().any(|(existing, _)| *existing == k) {
                        return Err(de::Error::custom(format!("duplicate key \"{k}\"")));
                    }
                    out.push((k, v));
                }
                Ok(Json::Object(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// "How to URL encode keys and string values": everything but `a-z A-Z 0-9 - . _ ~` is
/// percent-encoded with uppercase hex digits.
const RESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

fn encode(s: &str) -> String {
    utf8_percent_encode(s, RESERVED).to_string()
}

fn collect_leaves(path: &str, value: &Json, out: &mut Vec<(String, String)>) {
    let join = |segment: String| {
        if path.is_empty() {
            segment
        } else {
            format!("{path}+{segment}")
        }
    };
    match value {
        Json::Null => out.push((path.to_string(), "null".to_string())),
        Json::Bool(b) => out.push((path.to_string(), b.to_string())),
        Json::Number(n) => out.push((path.to_string(), n.clone())),
        Json::String(s) => out.push((path.to_string(), format!("\"{}\"", encode(s)))),
        Json::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                collect_leaves(&join(i.to_string()), item, out);
            }
        }
        Json::Object(fields) => {
            for (k, v) in fields {
                collect_leaves(&join(format!("\"{}\"", encode(k))), v, out);
            }
        }
    }
}

/// The canonical form of a JSON object per "JSON checksum" (top-level `checksum` ignored).
fn canonicalize(root: &Json) -> String {
    let mut leaves = Vec::new();
    if let Json::Object(fields) = root {
        for (k, v) in fields {
            if k == "checksum" {
                continue;
            }
            collect_leaves(&format!("\"{}\"", encode(k)), v, &mut leaves);
        }
    } else {
        collect_leaves("", root, &mut leaves);
    }
    leaves.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    leaves
        .iter()
        .map(|(p, v)| format!("{p}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The MD5 checksum of `text` as the spec's "JSON checksum" defines it.
pub fn json_checksum(text: &str) -> Result<String, HintError> {
    let root: Json = serde_json::from_str(text).map_err(|e| HintError(e.to_string()))?;
    Ok(checksum_of(&root))
}

fn checksum_of(root: &Json) -> String {
    let digest = Md5::digest(canonicalize(root).as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn get<'a>(fields: &'a [(String, Json)], key: &str) -> Option<&'a Json> {
    fields.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

fn as_i64(v: Option<&Json>, key: &str) -> Result<Option<i64>, HintError> {
    match v {
        None | Some(Json::Null) => Ok(None),
        Some(Json::Number(n)) => n
            .parse::<i64>()
            .map(Some)
            .map_err(|_| HintError(format!("field {key} is not an integer: {n}"))),
        Some(other) => Err(HintError(format!("field {key} is not a number: {other:?}"))),
    }
}

/// Parses and validates `_last_checkpoint`, verifying its checksum when one is present.
pub fn parse_last_checkpoint(bytes: &[u8]) -> Result<LastCheckpointHint, HintError> {
    let text = std::str::from_utf8(bytes).map_err(|_| HintError("not UTF-8".to_string()))?;
    let root: Json = serde_json::from_str(text).map_err(|e| HintError(e.to_string()))?;
    let Json::Object(fields) = &root else {
        return Err(HintError("not a JSON object".to_string()));
    };
    if let Some(expected) = get(fields, "checksum") {
        let Json::String(expected) = expected else {
            return Err(HintError("checksum is not a string".to_string()));
        };
        let actual = checksum_of(&root);
        if !actual.eq_ignore_ascii_case(expected) {
            return Err(HintError(format!(
                "checksum mismatch: file says {expected}, content hashes to {actual}"
            )));
        }
    }
    let version = as_i64(get(fields, "version"), "version")?
        .ok_or_else(|| HintError("missing required field version".to_string()))?;
    let version =
        u64::try_from(version).map_err(|_| HintError(format!("negative version {version}")))?;
    let parts = match as_i64(get(fields, "parts"), "parts")? {
        None => None,
        Some(p) if (1..=u32::MAX as i64).contains(&p) => Some(p as u32),
        Some(p) => return Err(HintError(format!("invalid parts {p}"))),
    };
    Ok(LastCheckpointHint {
        version,
        size: as_i64(get(fields, "size"), "size")?,
        parts,
        size_in_bytes: as_i64(get(fields, "sizeInBytes"), "sizeInBytes")?,
        num_of_add_files: as_i64(get(fields, "numOfAddFiles"), "numOfAddFiles")?,
    })
}

/// Serializes a hint to JSON with its checksum (used by checkpoint writers and tests).
pub fn write_last_checkpoint(fields: &BTreeMap<String, serde_json::Value>) -> String {
    let body = serde_json::Value::Object(fields.clone().into_iter().collect()).to_string();
    // `body` is our own serialization, so it always parses.
    let checksum = json_checksum(&body).unwrap_or_default();
    let mut with_sum = fields.clone();
    with_sum.insert("checksum".to_string(), serde_json::Value::String(checksum));
    serde_json::Value::Object(with_sum.into_iter().collect()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of the spec's "JSON checksum" section.
    const SPEC_JSON: &str = r#"{"k0":"'v 0'", "checksum": "adsaskfljadfkjadfkj", "k1":{"k2": 2, "k3": ["v3", [1, 2], {"k4": "v4", "k5": ["v5", "v6", "v7"]}]}}"#;

    #[test]
    fn spec_example_canonical_form() {
        let root: Json = serde_json::from_str(SPEC_JSON).unwrap();
        assert_eq!(
            canonicalize(&root),
            r#""k0"="%27v%200%27","k1"+"k2"=2,"k1"+"k3"+0="v3","k1"+"k3"+1+0=1,"k1"+"k3"+1+1=2,"k1"+"k3"+2+"k4"="v4","k1"+"k3"+2+"k5"+0="v5","k1"+"k3"+2+"k5"+1="v6","k1"+"k3"+2+"k5"+2="v7""#
        );
    }

    #[test]
    fn spec_example_checksum() {
        assert_eq!(
            json_checksum(SPEC_JSON).unwrap(),
            "6a92d155a59bf2eecbd4b4ec7fd1f875"
        );
    }

    #[test]
    fn valid_hint_with_checksum() {
        let mut fields = BTreeMap::new();
        fields.insert("version".to_string(), serde_json::json!(10));
        fields.insert("size".to_string(), serde_json::json!(13));
        fields.insert("parts".to_string(), serde_json::json!(2));
        let text = write_last_checkpoint(&fields);
        let hint = parse_last_checkpoint(text.as_bytes()).unwrap();
        assert_eq!(hint.version, 10);
        assert_eq!(hint.size, Some(13));
        assert_eq!(hint.parts, Some(2));
    }

    #[test]
    fn bad_checksum_rejected() {
        let text = r#"{"version":10,"size":13,"checksum":"00000000000000000000000000000000"}"#;
        let err = parse_last_checkpoint(text.as_bytes()).unwrap_err();
        assert!(err.0.contains("checksum mismatch"), "{err}");
    }

    #[test]
    fn duplicate_keys_rejected() {
        let err = parse_last_checkpoint(br#"{"version":10,"version":11}"#).unwrap_err();
        assert!(err.0.contains("duplicate"), "{err}");
    }

    #[test]
    fn garbage_rejected() {
        assert!(parse_last_checkpoint(b"not json").is_err());
        assert!(parse_last_checkpoint(b"[1,2]").is_err());
        assert!(parse_last_checkpoint(br#"{"size":3}"#).is_err());
        assert!(parse_last_checkpoint(br#"{"version":-3}"#).is_err());
        assert!(parse_last_checkpoint(br#"{"version":"3"}"#).is_err());
        assert!(parse_last_checkpoint(&[0xff, 0xfe]).is_err());
    }

    #[test]
    fn no_checksum_is_fine() {
        let hint = parse_last_checkpoint(br#"{"version":3,"size":7}"#).unwrap();
        assert_eq!(hint.version, 3);
        assert_eq!(hint.parts, None);
    }
}
