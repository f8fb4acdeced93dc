//! Paths in the log: RFC 2396 URI decoding and the identity of logical files.
//!
//! Spec: "Add File and Remove File" (`path` "is a URI as specified by RFC 2396 URI Generic
//! Syntax, which needs to be decoded to get the data file path"; the primary key of a logical
//! file is `(path, deletionVector.uniqueId)`), "Derived Fields" of "Deletion Vectors"
//! (`uniqueId`).

use std::borrow::Cow;

use percent_encoding::percent_decode_str;

/// Decodes a URI-encoded log path (`%20` → space). Paths without `%` are returned as they are.
pub fn decode_uri_path(raw: &str) -> Result<Cow<'_, str>, String> {
    if !raw.contains('%') {
        return Ok(Cow::Borrowed(raw));
    }
    percent_decode_str(raw).decode_utf8().map_err(|_| {
        format!("path {raw:?} does not decode to UTF-8 (spec: \"Add File and Remove File\")")
    })
}

/// The canonical form of a decoded path, used to compare file actions: `file:` URIs of the
/// local file system (`file:/x`, `file:///x`) and the bare absolute path `/x` name one file.
pub fn canonical_path(decoded: &str) -> &str {
    match decoded.strip_prefix("file:") {
        Some(rest) if rest.starts_with("///") => &rest[2..],
        Some(rest) if rest.starts_with('/') && !rest.starts_with("//") => rest,
        _ => decoded,
    }
}

/// The `uniqueId` of a deletion vector descriptor ("Derived Fields"): `storageType` followed by
/// `pathOrInlineDv`, then `@offset` when an offset is present.
pub fn dv_unique_id(storage_type: &str, path_or_inline: &str, offset: Option<i32>) -> String {
    match offset {
        Some(o) => format!("{storage_type}{path_or_inline}@{o}"),
        None => format!("{storage_type}{path_or_inline}"),
    }
}

/// The primary key of a logical file: its canonical decoded path plus the DV's unique id.
/// Borrows when the path needs no decoding and there is no DV (the common case).
pub fn file_key<'a>(raw_path: &'a str, dv_unique_id: Option<&str>) -> Result<Cow<'a, str>, String> {
    let decoded = decode_uri_path(raw_path)?;
    let key: Cow<'a, str> = match decoded {
        Cow::Borrowed(s) => Cow::Borrowed(canonical_path(s)),
        Cow::Owned(s) => Cow::Owned(canonical_path(&s).to_string()),
    };
    Ok(match dv_unique_id {
        // NUL cannot occur in a decoded path, so it separates the two parts unambiguously.
        Some(id) => Cow::Owned(format!("{key}\u{0}{id}")),
        None => key,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoding() {
        assert_eq!(decode_uri_path("special%20p@%23h").unwrap(), "special p@#h");
        assert_eq!(
            decode_uri_path("bar%2Dbar.snappy.parquet").unwrap(),
            "bar-bar.snappy.parquet"
        );
        assert!(matches!(
            decode_uri_path("plain.parquet").unwrap(),
            Cow::Borrowed(_)
        ));
        assert!(decode_uri_path("bad%FF%FE").is_err());
    }

    #[test]
    fn file_uris_and_absolute_paths_are_one_file() {
        let a = file_key("file:/some/unqualified/with%20space/p@%23h", None).unwrap();
        let b = file_key("file:///some/unqualified/with%20space/p@%23h", None).unwrap();
        let c = file_key("/some/unqualified/with%20space/p@%23h", None).unwrap();
        assert_eq!(a, c);
        assert_eq!(b, c);
        assert_eq!(c, "/some/unqualified/with space/p@#h");
        // A host part is kept.
        assert_eq!(canonical_path("file://host/x"), "file://host/x");
        assert_eq!(canonical_path("s3://bucket/x"), "s3://bucket/x");
    }

    #[test]
    fn dv_is_part_of_the_key() {
        let plain = file_key("a.parquet", None).unwrap();
        let id = dv_unique_id("u", "ab^-aqEH.-t@S}K{vb[*k^", Some(4));
        assert_eq!(id, "uab^-aqEH.-t@S}K{vb[*k^@4");
        let with_dv = file_key("a.parquet", Some(&id)).unwrap();
        assert_ne!(plain, with_dv);
        assert_eq!(
            dv_unique_id(
                "i",
                "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L",
                None
            ),
            "iwi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L"
        );
    }
}
