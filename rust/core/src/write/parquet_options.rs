//! How data files are encoded: compression and its level, row group and page sizes, and per
//! column dictionary encoding, parquet statistics and bloom filters (deltalake's
//! `WriterProperties`). None of it changes what the log says about a file (spec "Per-file
//! Statistics" are computed by deltalog itself); it trades file size, write speed and what
//! parquet readers can skip inside a file.

use std::collections::BTreeMap;

use parquet::basic::{BrotliLevel, Compression, GzipLevel, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterPropertiesBuilder};
use parquet::schema::types::ColumnPath;
use serde::Deserialize;

use crate::error::{DeltaError, DeltaResult};

/// Bloom filter settings of a column.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BloomFilter {
    pub enabled: bool,
    /// False positive probability (0 < fpp < 1).
    pub fpp: Option<f64>,
    /// Expected number of distinct values.
    pub ndv: Option<u64>,
}

/// Settings of one column (or the default of every column).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnSettings {
    pub dictionary_enabled: Option<bool>,
    /// `NONE`, `CHUNK` or `PAGE`.
    pub statistics_enabled: Option<String>,
    pub bloom_filter: Option<BloomFilter>,
}

/// Settings of the parquet writer.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParquetSettings {
    /// `UNCOMPRESSED`, `SNAPPY` (the default), `GZIP`, `BROTLI`, `LZ4`, `LZ4_RAW`, `ZSTD`.
    pub compression: Option<String>,
    /// The codec's level (GZIP 0-9, BROTLI 0-11, ZSTD 1-22).
    pub compression_level: Option<i32>,
    /// Rows of a row group at most.
    pub max_row_group_size: Option<usize>,
    pub data_page_size_limit: Option<usize>,
    pub dictionary_page_size_limit: Option<usize>,
    pub data_page_row_count_limit: Option<usize>,
    pub write_batch_size: Option<usize>,
    /// Bytes of parquet min/max statistics kept for long values.
    pub statistics_truncate_length: Option<usize>,
    pub default_column_properties: Option<ColumnSettings>,
    /// Per column, by dotted path (nested fields `a.b`).
    #[serde(default)]
    pub column_properties: BTreeMap<String, ColumnSettings>,
}

fn invalid(message: String) -> DeltaError {
    DeltaError::InvalidArgument(message)
}

fn positive(name: &str, value: Option<usize>) -> DeltaResult<Option<usize>> {
    match value {
        Some(0) => Err(invalid(format!("{name} must be positive"))),
        other => Ok(other),
    }
}

impl ParquetSettings {
    /// Whether the settings say anything about dictionaries (`dictionary_enabled` for any
    /// column, or the dictionary page limit). Otherwise the writer may drop the dictionary of
    /// a column whose dictionary overflowed, as under deltalog's own settings
    /// ([`crate::write::encoder`]).
    pub fn sets_dictionary(&self) -> bool {
        let sets = |c: &ColumnSettings| c.dictionary_enabled.is_some();
        self.dictionary_page_size_limit.is_some()
            || self.default_column_properties.as_ref().is_some_and(sets)
            || self.column_properties.values().any(sets)
    }

    /// The settings with their columns' top-level names mapped by `physical`: settings name
    /// logical columns, and the files of a column-mapped table hold physical ones (spec
    /// "Column Mapping"). Nested paths keep the names after their first dot.
    pub fn renamed(&self, physical: impl Fn(&str) -> String) -> Self {
        let mut renamed = self.clone();
        renamed.column_properties = self
            .column_properties
            .iter()
            .map(|(name, column)| {
                let path = match name.split_once('.') {
                    Some((top, rest)) => format!("{}.{rest}", physical(top)),
                    None => physical(name),
                };
                (path, column.clone())
            })
            .collect();
        renamed
    }

    /// Parses the JSON form (the Python layer's `WriterProperties`).
    pub fn from_json(text: &str) -> DeltaResult<Self> {
        serde_json::from_str(text).map_err(|e| invalid(format!("bad writer properties: {e}")))
    }

    /// The codec asked for (SNAPPY when none).
    pub fn compression(&self) -> DeltaResult<Compression> {
        let name = self
            .compression
            .as_deref()
            .unwrap_or("SNAPPY")
            .to_ascii_uppercase();
        let level = self.compression_level;
        let bad_level = |e: parquet::errors::ParquetError| {
            invalid(format!("compression level {level:?} for {name}: {e}"))
        };
        let no_level = |codec: Compression| match level {
            Some(l) => Err(invalid(format!(
                "{name} takes no compression level (got {l})"
            ))),
            None => Ok(codec),
        };
        match name.as_str() {
            "UNCOMPRESSED" => no_level(Compression::UNCOMPRESSED),
            "SNAPPY" => no_level(Compression::SNAPPY),
            "LZ4" => no_level(Compression::LZ4),
            "LZ4_RAW" => no_level(Compression::LZ4_RAW),
            "GZIP" => Ok(Compression::GZIP(match level {
                Some(l) => {
                    GzipLevel::try_new(u32::try_from(l).unwrap_or(u32::MAX)).map_err(bad_level)?
                }
                None => GzipLevel::default(),
            })),
            "BROTLI" => Ok(Compression::BROTLI(match level {
                Some(l) => {
                    BrotliLevel::try_new(u32::try_from(l).unwrap_or(u32::MAX)).map_err(bad_level)?
                }
                None => BrotliLevel::default(),
            })),
            "ZSTD" => Ok(Compression::ZSTD(match level {
                Some(l) => ZstdLevel::try_new(l).map_err(bad_level)?,
                None => ZstdLevel::default(),
            })),
            other => Err(invalid(format!(
                "unknown compression {other:?} (UNCOMPRESSED, SNAPPY, GZIP, BROTLI, LZ4, \
                 LZ4_RAW, ZSTD)"
            ))),
        }
    }

    /// Rows per row group (the writer's own cut; `None`: its default).
    pub fn row_group_rows(&self) -> DeltaResult<Option<usize>> {
        positive("max_row_group_size", self.max_row_group_size)
    }

    /// The parquet crate's properties for files whose columns are `columns` (dotted leaf
    /// paths as written), checking that every configured column exists.
    pub fn writer_properties(&self, columns: &[String]) -> DeltaResult<WriterProperties> {
        let mut b = WriterProperties::builder().set_compression(self.compression()?);
        if let Some(n) = positive("data_page_size_limit", self.data_page_size_limit)? {
            b = b.set_data_page_size_limit(n);
        }
        if let Some(n) = positive(
            "dictionary_page_size_limit",
            self.dictionary_page_size_limit,
        )? {
            b = b.set_dictionary_page_size_limit(n);
        }
        if let Some(n) = positive("data_page_row_count_limit", self.data_page_row_count_limit)? {
            b = b.set_data_page_row_count_limit(n);
        }
        if let Some(n) = positive("write_batch_size", self.write_batch_size)? {
            b = b.set_write_batch_size(n);
        }
        if let Some(n) = positive(
            "statistics_truncate_length",
            self.statistics_truncate_length,
        )? {
            b = b.set_statistics_truncate_length(Some(n));
        }
        if let Some(defaults) = &self.default_column_properties {
            b = apply(b, None, defaults)?;
        }
        for (name, settings) in &self.column_properties {
            // A column by its path, or a struct column by the prefix of its leaves.
            let leaves: Vec<&String> = columns
                .iter()
                .filter(|c| *c == name || c.starts_with(&format!("{name}.")))
                .collect();
            if leaves.is_empty() {
                return Err(invalid(format!(
                    "writer properties name column {name:?}, which the files do not have"
                )));
            }
            for leaf in leaves {
                b = apply(b, Some(leaf), settings)?;
            }
        }
        Ok(b.build())
    }
}

fn apply(
    mut b: WriterPropertiesBuilder,
    column: Option<&str>,
    s: &ColumnSettings,
) -> DeltaResult<WriterPropertiesBuilder> {
    let path = column.map(|c| ColumnPath::new(c.split('.').map(str::to_string).collect()));
    if let Some(enabled) = s.dictionary_enabled {
        b = match &path {
            Some(p) => b.set_column_dictionary_enabled(p.clone(), enabled),
            None => b.set_dictionary_enabled(enabled),
        };
    }
    if let Some(level) = &s.statistics_enabled {
        let level = match level.to_ascii_uppercase().as_str() {
            "NONE" => EnabledStatistics::None,
            "CHUNK" => EnabledStatistics::Chunk,
            "PAGE" => EnabledStatistics::Page,
            other => {
                return Err(invalid(format!(
                    "statistics_enabled {other:?} is not NONE, CHUNK or PAGE"
                )))
            }
        };
        b = match &path {
            Some(p) => b.set_column_statistics_enabled(p.clone(), level),
            None => b.set_statistics_enabled(level),
        };
    }
    if let Some(bloom) = &s.bloom_filter {
        if let Some(fpp) = bloom.fpp {
            if !(fpp > 0.0 && fpp < 1.0) {
                return Err(invalid(format!(
                    "a bloom filter's fpp must be between 0 and 1, not {fpp}"
                )));
            }
        }
        b = match &path {
            Some(p) => {
                let mut b = b.set_column_bloom_filter_enabled(p.clone(), bloom.enabled);
                if let Some(fpp) = bloom.fpp {
                    b = b.set_column_bloom_filter_fpp(p.clone(), fpp);
                }
                if let Some(ndv) = bloom.ndv {
                    b = b.set_column_bloom_filter_max_ndv(p.clone(), ndv);
                }
                b
            }
            None => {
                let mut b = b.set_bloom_filter_enabled(bloom.enabled);
                if let Some(fpp) = bloom.fpp {
                    b = b.set_bloom_filter_fpp(fpp);
                }
                if let Some(ndv) = bloom.ndv {
                    b = b.set_bloom_filter_max_ndv(ndv);
                }
                b
            }
        };
    }
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codecs_and_levels() {
        let s = |json: &str| ParquetSettings::from_json(json).expect("settings");
        assert_eq!(s("{}").compression().ok(), Some(Compression::SNAPPY));
        assert!(matches!(
            s(r#"{"compression": "zstd", "compression_level": 9}"#).compression(),
            Ok(Compression::ZSTD(_))
        ));
        assert!(s(r#"{"compression": "zstd", "compression_level": 99}"#)
            .compression()
            .is_err());
        assert!(s(r#"{"compression": "snappy", "compression_level": 1}"#)
            .compression()
            .is_err());
        assert!(s(r#"{"compression": "lzo"}"#).compression().is_err());
        assert!(ParquetSettings::from_json(r#"{"compresion": "zstd"}"#).is_err());
        assert!(s(r#"{"max_row_group_size": 0}"#).row_group_rows().is_err());
    }

    #[test]
    fn columns_must_exist() {
        let s = ParquetSettings::from_json(
            r#"{"column_properties": {"s": {"bloom_filter": {"enabled": true, "fpp": 0.01}}}}"#,
        )
        .expect("settings");
        let props = s
            .writer_properties(&["id".into(), "s.a".into(), "s.b".into()])
            .expect("props");
        let leaf = ColumnPath::new(vec!["s".into(), "a".into()]);
        assert!(props.bloom_filter_properties(&leaf).is_some());
        assert!(s.writer_properties(&["id".into()]).is_err());
        let bad = ParquetSettings::from_json(
            r#"{"default_column_properties": {"statistics_enabled": "ROW"}}"#,
        )
        .expect("settings");
        assert!(bad.writer_properties(&[]).is_err());
    }

    #[test]
    fn settings_that_set_dictionaries() {
        let s = |json: &str| ParquetSettings::from_json(json).expect("settings");
        assert!(!s("{}").sets_dictionary());
        assert!(!s(r#"{"compression": "zstd", "max_row_group_size": 10}"#).sets_dictionary());
        assert!(
            !s(r#"{"column_properties": {"a": {"statistics_enabled": "NONE"}}}"#).sets_dictionary()
        );
        assert!(s(r#"{"dictionary_page_size_limit": 4096}"#).sets_dictionary());
        assert!(
            s(r#"{"default_column_properties": {"dictionary_enabled": true}}"#).sets_dictionary()
        );
        assert!(
            s(r#"{"column_properties": {"a": {"dictionary_enabled": false}}}"#).sets_dictionary()
        );
    }
}
