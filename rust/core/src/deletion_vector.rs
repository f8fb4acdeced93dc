//! Deletion vectors: descriptors, Z85, the 64-bit RoaringBitmap format and DV files.
//!
//! Spec: "Deletion Vectors", "Deletion Vector Descriptor Schema" (with its "Derived Fields"),
//! "Deletion Vector Format" and "Deletion Vector File Storage Format". A descriptor says where
//! the serialized bitmap is: inline in the log (`i`, Z85 text), in a file next to the data named
//! after a UUID (`u`), or at an absolute path (`p`). The bitmap is a magic number followed by a
//! RoaringBitmap in the portable 64-bit format; a file holds, at the descriptor's offset, the
//! bitmap's size, the bitmap and its CRC-32 (big-endian). Everything read is checked (magic,
//! size, checksum, keys, cardinality); any mismatch is a
//! [`DeltaError::CorruptDeletionVector`] naming the file.

use std::io::Cursor;

use object_store::ObjectStoreExt;
use roaring::RoaringTreemap;

use crate::error::{DeltaError, DeltaResult};
use crate::paths::dv_unique_id;
use crate::storage::Storage;

/// Magic number that starts every serialized deletion vector ("Deletion Vector Format"),
/// little-endian, followed by the portable 64-bit RoaringBitmap format.
pub const MAGIC: u32 = 1_681_511_377;

/// Magic number of the older "native" layout (big-endian): a count of 32-bit bitmaps, then
/// each one's size and serialization, bitmap `i` holding the rows whose high 32 bits are `i`.
/// Delta writers used it for inline vectors, and the spec's inline example is in it.
pub const NATIVE_MAGIC: u32 = 1_681_511_376;

/// Version byte of the DV file format this module reads.
pub const FILE_FORMAT_VERSION: u8 = 1;

/// The Z85 alphabet (ZeroMQ RFC 32), the Base85 variant the spec uses.
const Z85: &[u8; 85] =
    b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

/// The value of each Z85 character (`0xFF`: not in the alphabet).
const Z85_VALUES: [u8; 256] = {
    let mut table = [0xFFu8; 256];
    let mut i = 0;
    while i < 85 {
        table[Z85[i] as usize] = i as u8;
        i += 1;
    }
    table
};

/// Z85-encodes `bytes`, padded with zero bytes to a multiple of four (as Delta writers do; the
/// descriptor's `sizeInBytes` gives the unpadded length).
pub fn z85_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(4) * 5);
    for chunk in bytes.chunks(4) {
        let mut word = [0u8; 4];
        word[..chunk.len()].copy_from_slice(chunk);
        let mut value = u32::from_be_bytes(word);
        let mut digits = [0u8; 5];
        for d in digits.iter_mut().rev() {
            *d = Z85[(value % 85) as usize];
            value /= 85;
        }
        out.extend(digits.iter().map(|&c| char::from(c)));
    }
    out
}

/// Decodes Z85 text (a multiple of five characters) into four bytes per five characters.
pub fn z85_decode(text: &str) -> Result<Vec<u8>, String> {
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(5) {
        return Err(format!(
            "Z85 text of {} characters is not a multiple of 5",
            bytes.len()
        ));
    }
    let mut out = Vec::with_capacity(bytes.len() / 5 * 4);
    for (i, chunk) in bytes.chunks(5).enumerate() {
        let mut value: u64 = 0;
        for &c in chunk {
            let digit = Z85_VALUES[usize::from(c)];
            if digit == 0xFF {
                return Err(format!("{:?} is not a Z85 character", char::from(c)));
            }
            value = value * 85 + u64::from(digit);
        }
        let word =
            u32::try_from(value).map_err(|_| format!("Z85 group {i} encodes more than 32 bits"))?;
        out.extend_from_slice(&word.to_be_bytes());
    }
    Ok(out)
}

/// Where a deletion vector is stored (the descriptor's `storageType`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DvLocation {
    /// `i`: the bitmap itself, Z85-encoded in the descriptor.
    Inline,
    /// `u`: `<table root>/<prefix>/deletion_vector_<uuid>.bin`.
    Relative {
        /// The random prefix (possibly empty).
        prefix: String,
        /// The UUID in canonical textual form.
        uuid: String,
    },
    /// `p`: an absolute path or URI.
    Absolute(String),
}

/// A deletion vector descriptor ("Deletion Vector Descriptor Schema"); serializes with the
/// spec's field names.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DvDescriptor {
    pub storage_type: String,
    pub path_or_inline_dv: String,
    pub offset: Option<i32>,
    pub size_in_bytes: i32,
    pub cardinality: i64,
}

/// Canonical text (8-4-4-4-12 lowercase hex) of a UUID's 16 bytes.
fn uuid_text(b: &[u8; 16]) -> String {
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// `<prefix>/deletion_vector_<uuid>.bin` (no directory when the prefix is empty).
fn relative_file(prefix: &str, uuid: &str) -> String {
    if prefix.is_empty() {
        format!("deletion_vector_{uuid}.bin")
    } else {
        format!("{prefix}/deletion_vector_{uuid}.bin")
    }
}

impl DvDescriptor {
    /// Reads row `row` of a `deletionVector` struct column; `None` where it is null. A
    /// descriptor missing a required field is an error naming `context`.
    pub fn from_row(
        s: &arrow::array::StructArray,
        row: usize,
        context: &str,
    ) -> DeltaResult<Option<Self>> {
        use arrow::array::Array;
        if s.is_null(row) {
            return Ok(None);
        }
        let missing = |field: &str| corrupt(context, format!("the descriptor has no {field}"));
        let size =
            crate::model::i64_field(s, "sizeInBytes", row).ok_or_else(|| missing("sizeInBytes"))?;
        Ok(Some(DvDescriptor {
            storage_type: crate::model::str_field(s, "storageType", row)
                .ok_or_else(|| missing("storageType"))?
                .to_string(),
            path_or_inline_dv: crate::model::str_field(s, "pathOrInlineDv", row)
                .ok_or_else(|| missing("pathOrInlineDv"))?
                .to_string(),
            offset: crate::model::i64_field(s, "offset", row)
                .map(|o| {
                    i32::try_from(o)
                        .map_err(|_| corrupt(context, format!("offset {o} out of range")))
                })
                .transpose()?,
            size_in_bytes: i32::try_from(size)
                .map_err(|_| corrupt(context, format!("sizeInBytes {size} out of range")))?,
            cardinality: crate::model::i64_field(s, "cardinality", row)
                .ok_or_else(|| missing("cardinality"))?,
        }))
    }

    /// `uniqueId` ("Derived Fields").
    pub fn unique_id(&self) -> String {
        dv_unique_id(&self.storage_type, &self.path_or_inline_dv, self.offset)
    }

    /// Where the bitmap is stored. `context` names the data file the DV belongs to, for errors.
    pub fn location(&self, context: &str) -> DeltaResult<DvLocation> {
        match self.storage_type.as_str() {
            "i" => Ok(DvLocation::Inline),
            "p" => Ok(DvLocation::Absolute(self.path_or_inline_dv.clone())),
            "u" => {
                // The UUID is the last 20 characters; anything before is the random prefix.
                let text = &self.path_or_inline_dv;
                let split = text
                    .len()
                    .checked_sub(20)
                    .filter(|&s| text.is_char_boundary(s));
                let Some(split) = split else {
                    return Err(corrupt(
                        context,
                        format!("pathOrInlineDv {text:?} is shorter than a Z85-encoded UUID"),
                    ));
                };
                let decoded = z85_decode(&text[split..]).map_err(|e| corrupt(context, e))?;
                let uuid: [u8; 16] = decoded
                    .try_into()
                    .map_err(|_| corrupt(context, "the UUID does not decode to 16 bytes"))?;
                Ok(DvLocation::Relative {
                    prefix: text[..split].to_string(),
                    uuid: uuid_text(&uuid),
                })
            }
            other => Err(corrupt(
                context,
                format!("unknown storageType {other:?} (legal: 'u', 'i', 'p')"),
            )),
        }
    }

    /// The DV file's path relative to the table root, for `u` descriptors (`absolutePath` in
    /// "Derived Fields", without the parent directory).
    pub fn relative_path(&self, context: &str) -> DeltaResult<Option<String>> {
        Ok(match self.location(context)? {
            DvLocation::Relative { prefix, uuid } => Some(relative_file(&prefix, &uuid)),
            _ => None,
        })
    }

    /// Decodes the deletion vector: from the descriptor when inline, otherwise from its file
    /// in `storage`. `context` names the data file it belongs to.
    pub async fn load(&self, storage: &Storage, context: &str) -> DeltaResult<RoaringTreemap> {
        let (path, name) = match self.location(context)? {
            DvLocation::Inline => return self.decode_inline(context),
            DvLocation::Relative { prefix, uuid } => {
                let relative = relative_file(&prefix, &uuid);
                (storage.table_path(&relative), relative)
            }
            DvLocation::Absolute(uri) => match storage.resolve_absolute(&uri) {
                Some(path) => (path, uri),
                None => {
                    return Err(DeltaError::Unsupported(format!(
                        "deletion vector {uri} of {context} is outside the table's store"
                    )))
                }
            },
        };
        let offset = usize::try_from(self.offset.unwrap_or(1))
            .map_err(|_| corrupt(&name, format!("negative offset {:?}", self.offset)))?;
        let size = self.size(&name)?;
        // The size field, the bitmap and its checksum.
        let range = offset as u64..(offset + 4 + size + 4) as u64;
        let bytes = match storage.store().get_range(&path, range.clone()).await {
            Ok(b) => b,
            Err(object_store::Error::NotFound { .. }) => {
                return Err(corrupt(
                    &name,
                    format!("the file does not exist (DV of {context})"),
                ))
            }
            Err(e) => {
                // A file shorter than the descriptor says (empty, truncated, or an offset past
                // its end) is a damaged DV, whatever error the store gives for the range.
                return Err(match storage.store().head(&path).await {
                    Ok(meta) if meta.size < range.end => corrupt(
                        &name,
                        format!(
                            "the file is {} bytes long, but the deletion vector of {context} \
                             (offset {offset}, sizeInBytes {size}) needs bytes {}..{} (spec: \
                             \"Deletion Vector File Storage Format\")",
                            meta.size, range.start, range.end
                        ),
                    ),
                    _ => e.into(),
                });
            }
        };
        self.decode_stored(&bytes, &name)
            .map_err(|e| with_context(e, context))
    }

    /// `sizeInBytes`, checked; `name` names the file for the error.
    fn size(&self, name: &str) -> DeltaResult<usize> {
        usize::try_from(self.size_in_bytes)
            .map_err(|_| corrupt(name, format!("negative sizeInBytes {}", self.size_in_bytes)))
    }

    /// Decodes an inline (`i`) deletion vector.
    pub fn decode_inline(&self, context: &str) -> DeltaResult<RoaringTreemap> {
        let name = format!("inline deletion vector of {context}");
        let size = self.size(&name)?;
        let data = z85_decode(&self.path_or_inline_dv).map_err(|e| corrupt(&name, e))?;
        let data = data.get(..size).ok_or_else(|| {
            corrupt(
                &name,
                format!("{} bytes decoded, sizeInBytes is {size}", data.len()),
            )
        })?;
        let bitmap = parse_bitmap(data, &name)?;
        self.check_cardinality(&bitmap, &name)?;
        Ok(bitmap)
    }

    /// Decodes a deletion vector stored in a file, given the bytes from its offset: size,
    /// bitmap, checksum ("Deletion Vector File Storage Format"). `name` names the file.
    pub fn decode_stored(&self, bytes: &[u8], name: &str) -> DeltaResult<RoaringTreemap> {
        let size = self.size(name)?;
        let stored = bytes
            .get(..4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
            .ok_or_else(|| corrupt(name, "the file ends before the deletion vector's size"))?;
        if stored != size {
            return Err(corrupt(
                name,
                format!("the file gives the deletion vector {stored} bytes, sizeInBytes is {size}"),
            ));
        }
        let data = bytes
            .get(4..4 + size)
            .ok_or_else(|| corrupt(name, "the file ends inside the deletion vector"))?;
        let checksum = bytes
            .get(4 + size..8 + size)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or_else(|| corrupt(name, "the file ends before the deletion vector's checksum"))?;
        let actual = crc32fast::hash(data);
        if actual != checksum {
            return Err(corrupt(
                name,
                format!("CRC-32 mismatch: stored {checksum:#010x}, computed {actual:#010x}"),
            ));
        }
        let bitmap = parse_bitmap(data, name)?;
        self.check_cardinality(&bitmap, name)?;
        Ok(bitmap)
    }

    fn check_cardinality(&self, bitmap: &RoaringTreemap, name: &str) -> DeltaResult<()> {
        let len = bitmap.len();
        if u64::try_from(self.cardinality).ok() != Some(len) {
            return Err(corrupt(
                name,
                format!(
                    "the deletion vector holds {len} rows, its descriptor's cardinality is {}",
                    self.cardinality
                ),
            ));
        }
        Ok(())
    }
}

/// Parses a serialized deletion vector: the magic number, then a RoaringBitmap in the portable
/// 64-bit format ("Deletion Vector Format") or in the older native layout ([`NATIVE_MAGIC`]).
/// Bucket keys must not have their top bit set.
pub fn parse_bitmap(data: &[u8], name: &str) -> DeltaResult<RoaringTreemap> {
    let head: [u8; 4] = data
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| corrupt(name, "shorter than the magic number"))?;
    let bitmap = if u32::from_le_bytes(head) == MAGIC {
        RoaringTreemap::deserialize_from(Cursor::new(&data[4..]))
            .map_err(|e| corrupt(name, format!("invalid 64-bit RoaringBitmap: {e}")))?
    } else if u32::from_be_bytes(head) == NATIVE_MAGIC {
        parse_native(&data[4..], name)?
    } else {
        return Err(corrupt(
            name,
            format!(
                "magic number {}, expected {MAGIC}",
                u32::from_le_bytes(head)
            ),
        ));
    };
    if bitmap.max().is_some_and(|m| m >> 63 != 0) {
        return Err(corrupt(
            name,
            "a bucket key has its most significant bit set (spec: \"Deletion Vector Format\")",
        ));
    }
    Ok(bitmap)
}

/// The native layout after its magic number (see [`NATIVE_MAGIC`]).
fn parse_native(data: &[u8], name: &str) -> DeltaResult<RoaringTreemap> {
    let be_u32 = |at: usize| -> DeltaResult<usize> {
        data.get(at..at + 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
            .ok_or_else(|| corrupt(name, "the native bitmap array is truncated"))
    };
    let count = be_u32(0)?;
    let mut pos = 4;
    let mut buckets = Vec::new();
    for key in 0..count {
        let size = be_u32(pos)?;
        let bytes = data
            .get(pos + 4..pos + 4 + size)
            .ok_or_else(|| corrupt(name, "the native bitmap array is truncated"))?;
        let bitmap = roaring::RoaringBitmap::deserialize_from(bytes)
            .map_err(|e| corrupt(name, format!("invalid 32-bit RoaringBitmap {key}: {e}")))?;
        let key = u32::try_from(key)
            .map_err(|_| corrupt(name, "more than 2^32 bitmaps in a native bitmap array"))?;
        buckets.push((key, bitmap));
        pos += 4 + size;
    }
    Ok(RoaringTreemap::from_bitmaps(buckets))
}

/// Serializes `bitmap` as a deletion vector (magic number + portable 64-bit format).
pub fn serialize_bitmap(bitmap: &RoaringTreemap) -> Vec<u8> {
    let mut out = MAGIC.to_le_bytes().to_vec();
    // Writing to a Vec cannot fail.
    let _ = bitmap.serialize_into(&mut out);
    out
}

/// `bitmap` as stored at its offset in a DV file ("Deletion Vector File Storage Format"): the
/// big-endian size of the serialized vector, the vector ([`serialize_bitmap`]) and its
/// big-endian CRC-32.
pub fn encode_stored(bitmap: &RoaringTreemap) -> Vec<u8> {
    let data = serialize_bitmap(bitmap);
    let mut out = Vec::with_capacity(data.len() + 8);
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(&data);
    out.extend_from_slice(&crc32fast::hash(&data).to_be_bytes());
    out
}

/// A DV file holding `bitmaps` one after another: the format version byte, then each
/// [`encode_stored`]. Returns the file and each vector's `(offset, sizeInBytes)`.
pub fn dv_file(bitmaps: &[RoaringTreemap]) -> (Vec<u8>, Vec<(i32, i32)>) {
    let mut file = vec![FILE_FORMAT_VERSION];
    let mut places = Vec::with_capacity(bitmaps.len());
    for bitmap in bitmaps {
        let stored = encode_stored(bitmap);
        places.push((file.len() as i32, (stored.len() - 8) as i32));
        file.extend(stored);
    }
    (file, places)
}

/// Adds the data file a stored vector belongs to, and the rule, to a decoding error.
fn with_context(e: DeltaError, context: &str) -> DeltaError {
    match e {
        DeltaError::CorruptDeletionVector { file, reason } => DeltaError::CorruptDeletionVector {
            file,
            reason: format!(
                "{reason} (DV of {context}; spec: \"Deletion Vector File Storage Format\")"
            ),
        },
        other => other,
    }
}

fn corrupt(file: &str, reason: impl Into<String>) -> DeltaError {
    DeltaError::CorruptDeletionVector {
        file: file.to_string(),
        reason: reason.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn inline_example() -> DvDescriptor {
        DvDescriptor {
            storage_type: "i".into(),
            path_or_inline_dv: "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L".into(),
            offset: None,
            size_in_bytes: 40,
            cardinality: 6,
        }
    }

    #[test]
    fn z85_matches_the_rfc_test_vector() {
        let bytes = [0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B];
        assert_eq!(z85_encode(&bytes), "HelloWorld");
        assert_eq!(z85_decode("HelloWorld").unwrap(), bytes);
        assert!(z85_decode("Hello").is_ok());
        assert!(z85_decode("Hell").is_err());
        assert!(z85_decode("Hell~").is_err());
        // Five '#' (the largest digit) exceed 32 bits.
        assert!(z85_decode("#####").is_err());
    }

    #[test]
    fn spec_inline_example_decodes_to_its_rows() {
        let dv = inline_example();
        assert_eq!(dv.location("f").unwrap(), DvLocation::Inline);
        let rows: Vec<u64> = dv.decode_inline("f").unwrap().iter().collect();
        assert_eq!(rows, [3, 4, 7, 11, 18, 29]);
        assert_eq!(dv.unique_id(), format!("i{}", dv.path_or_inline_dv));
    }

    #[test]
    fn spec_relative_example_resolves_its_path() {
        let dv = DvDescriptor {
            storage_type: "u".into(),
            path_or_inline_dv: "ab^-aqEH.-t@S}K{vb[*k^".into(),
            offset: Some(4),
            size_in_bytes: 40,
            cardinality: 6,
        };
        assert_eq!(
            dv.relative_path("f").unwrap().as_deref(),
            Some("ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin")
        );
        assert_eq!(dv.unique_id(), "uab^-aqEH.-t@S}K{vb[*k^@4");
        let no_prefix = DvDescriptor {
            path_or_inline_dv: "^-aqEH.-t@S}K{vb[*k^".into(),
            ..dv.clone()
        };
        assert_eq!(
            no_prefix.relative_path("f").unwrap().as_deref(),
            Some("deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin")
        );
        let short = DvDescriptor {
            path_or_inline_dv: "abc".into(),
            ..dv
        };
        assert!(matches!(
            short.relative_path("f"),
            Err(DeltaError::CorruptDeletionVector { .. })
        ));
    }

    #[test]
    fn inline_mismatches_are_corrupt() {
        let wrong_cardinality = DvDescriptor {
            cardinality: 5,
            ..inline_example()
        };
        let err = wrong_cardinality
            .decode_inline("part-0.parquet")
            .unwrap_err();
        assert!(err.to_string().contains("part-0.parquet"), "{err}");
        assert!(err.to_string().contains("cardinality"), "{err}");
        let too_long = DvDescriptor {
            size_in_bytes: 41,
            ..inline_example()
        };
        assert!(too_long.decode_inline("f").is_err());
        let mut bad_magic = serialize_bitmap(&RoaringTreemap::from_iter([1u64]));
        bad_magic[0] ^= 1;
        assert!(parse_bitmap(&bad_magic, "f")
            .unwrap_err()
            .to_string()
            .contains("magic"));
        assert!(parse_bitmap(&MAGIC.to_le_bytes(), "f").is_err());
    }

    #[test]
    fn the_native_layout_reads_like_the_portable_one() {
        let rows = [3u64, 4, (1 << 32) + 7, (2 << 32) + 1];
        let mut data = NATIVE_MAGIC.to_be_bytes().to_vec();
        data.extend_from_slice(&3u32.to_be_bytes());
        for high in 0..3u64 {
            let low: roaring::RoaringBitmap = rows
                .iter()
                .filter(|r| *r >> 32 == high)
                .map(|r| *r as u32)
                .collect();
            let mut bytes = Vec::new();
            low.serialize_into(&mut bytes).unwrap();
            data.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
            data.extend_from_slice(&bytes);
        }
        let parsed: Vec<u64> = parse_bitmap(&data, "f").unwrap().iter().collect();
        assert_eq!(parsed, rows);
        assert!(parse_bitmap(&data[..data.len() - 1], "f").is_err());
    }

    #[test]
    fn keys_with_the_top_bit_set_are_rejected() {
        let bitmap = RoaringTreemap::from_iter([1u64 << 63]);
        let err = parse_bitmap(&serialize_bitmap(&bitmap), "f").unwrap_err();
        assert!(err.to_string().contains("most significant bit"), "{err}");
        let fine = RoaringTreemap::from_iter([(1u64 << 62) + 5, 7]);
        assert_eq!(parse_bitmap(&serialize_bitmap(&fine), "f").unwrap(), fine);
    }

    #[test]
    fn stored_vectors_are_checked() {
        let bitmaps = [
            RoaringTreemap::from_iter([0u64, 5, 1 << 40]),
            RoaringTreemap::from_iter(0u64..100_000),
        ];
        let (file, places) = dv_file(&bitmaps);
        for (bitmap, (offset, size)) in bitmaps.iter().zip(&places) {
            let dv = DvDescriptor {
                storage_type: "u".into(),
                path_or_inline_dv: "^-aqEH.-t@S}K{vb[*k^".into(),
                offset: Some(*offset),
                size_in_bytes: *size,
                cardinality: bitmap.len() as i64,
            };
            let at = &file[*offset as usize..];
            assert_eq!(&dv.decode_stored(at, "dv.bin").unwrap(), bitmap);
            // A flipped bit in the bitmap fails the checksum.
            let mut damaged = at.to_vec();
            damaged[10] ^= 0x40;
            let err = dv.decode_stored(&damaged, "dv.bin").unwrap_err();
            assert!(err.to_string().contains("CRC-32"), "{err}");
            assert!(err.to_string().contains("dv.bin"), "{err}");
            // Truncated, or a size that disagrees with the descriptor.
            assert!(dv.decode_stored(&at[..*size as usize], "dv.bin").is_err());
            let wrong_size = DvDescriptor {
                size_in_bytes: size + 1,
                ..dv.clone()
            };
            assert!(wrong_size.decode_stored(at, "dv.bin").is_err());
        }
    }

    #[tokio::test]
    async fn vectors_load_from_the_table_directory() {
        let dir = tempfile::tempdir().unwrap();
        let bitmap = RoaringTreemap::from_iter([2u64, 3, 9]);
        let (file, places) = dv_file(std::slice::from_ref(&bitmap));
        std::fs::create_dir(dir.path().join("ab")).unwrap();
        let name = "ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin";
        std::fs::write(dir.path().join(name), &file).unwrap();
        let storage = Storage::open(dir.path().to_str().unwrap(), &Default::default()).unwrap();
        let dv = DvDescriptor {
            storage_type: "u".into(),
            path_or_inline_dv: "ab^-aqEH.-t@S}K{vb[*k^".into(),
            offset: Some(places[0].0),
            size_in_bytes: places[0].1,
            cardinality: 3,
        };
        assert_eq!(dv.load(&storage, "f").await.unwrap(), bitmap);
        let absolute = DvDescriptor {
            storage_type: "p".into(),
            path_or_inline_dv: dir.path().join(name).to_str().unwrap().to_string(),
            ..dv.clone()
        };
        assert_eq!(absolute.load(&storage, "f").await.unwrap(), bitmap);
        std::fs::remove_file(dir.path().join(name)).unwrap();
        let err = dv.load(&storage, "part-1.parquet").await.unwrap_err();
        assert!(
            matches!(err, DeltaError::CorruptDeletionVector { .. }),
            "{err}"
        );
        assert!(err.to_string().contains("does not exist"), "{err}");
        assert!(err.to_string().contains("part-1.parquet"), "{err}");

        // Empty, truncated inside the vector, truncated inside the checksum, and an offset
        // past the end: each a corrupt DV naming the file and the data file, never a storage
        // error.
        let full = file.len();
        let far = DvDescriptor {
            offset: Some(i32::try_from(full).unwrap() + 10),
            ..dv.clone()
        };
        for (bytes, descriptor) in [
            (&file[..0], &dv),
            (&file[..full / 2], &dv),
            (&file[..full - 2], &dv),
            (&file[..], &far),
        ] {
            std::fs::write(dir.path().join(name), bytes).unwrap();
            let err = descriptor
                .load(&storage, "part-1.parquet")
                .await
                .unwrap_err();
            match &err {
                DeltaError::CorruptDeletionVector { file, reason } => {
                    assert!(file.contains("deletion_vector_d2c639aa"), "{err}");
                    assert!(reason.contains("part-1.parquet"), "{err}");
                    assert!(
                        reason.contains("Deletion Vector File Storage Format"),
                        "{err}"
                    );
                }
                other => panic!("{} bytes: unexpected {other:?}", bytes.len()),
            }
        }
    }

    proptest! {
        #[test]
        fn z85_round_trips(words in proptest::collection::vec(any::<u32>(), 0..20)) {
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_be_bytes()).collect();
            prop_assert_eq!(z85_decode(&z85_encode(&bytes)).unwrap(), bytes);
        }

        #[test]
        fn z85_never_panics(text in "[ -~]{0,30}") {
            let _ = z85_decode(&text);
        }

        #[test]
        fn inline_vectors_round_trip(rows in proptest::collection::btree_set(0u64..(1 << 40), 0..200)) {
            let bitmap: RoaringTreemap = rows.iter().copied().collect();
            let data = serialize_bitmap(&bitmap);
            let dv = DvDescriptor {
                storage_type: "i".into(),
                path_or_inline_dv: z85_encode(&data),
                offset: None,
                size_in_bytes: data.len() as i32,
                cardinality: rows.len() as i64,
            };
            let back: Vec<u64> = dv.decode_inline("f").unwrap().iter().collect();
            prop_assert_eq!(back, rows.into_iter().collect::<Vec<_>>());
        }

        #[test]
        fn dv_files_round_trip_with_their_checksum(
            rows in proptest::collection::btree_set(0u64..(1 << 40), 0..200),
            flip in any::<prop::sample::Index>(),
        ) {
            let bitmap: RoaringTreemap = rows.iter().copied().collect();
            let (file, _) = dv_file(std::slice::from_ref(&bitmap));
            prop_assert_eq!(file[0], FILE_FORMAT_VERSION);
            let size = serialize_bitmap(&bitmap).len();
            let dv = DvDescriptor {
                storage_type: "u".into(),
                path_or_inline_dv: String::new(),
                offset: Some(1),
                size_in_bytes: size as i32,
                cardinality: rows.len() as i64,
            };
            let back: Vec<u64> = dv.decode_stored(&file[1..], "f").unwrap().iter().collect();
            prop_assert_eq!(back, rows.iter().copied().collect::<Vec<_>>());
            // Any changed byte of the vector or its checksum is caught.
            let mut damaged = file.clone();
            let at = 5 + flip.index(size + 4);
            damaged[at] ^= 0x01;
            prop_assert!(dv.decode_stored(&damaged[1..], "f").is_err());
        }

        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut with_magic = MAGIC.to_le_bytes().to_vec();
            with_magic.extend_from_slice(&data);
            let _ = parse_bitmap(&with_magic, "f");
            let mut native = NATIVE_MAGIC.to_be_bytes().to_vec();
            native.extend_from_slice(&data);
            let _ = parse_bitmap(&native, "f");
            let dv = DvDescriptor {
                storage_type: "u".into(),
                path_or_inline_dv: String::new(),
                offset: Some(1),
                size_in_bytes: data.len() as i32,
                cardinality: 0,
            };
            let _ = dv.decode_stored(&data, "f");
        }
    }
}
