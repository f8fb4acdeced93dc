//! The statistics of a data file another writer wrote, read from its parquet footer alone.
//!
//! Spec: "Per-file Statistics" (`numRecords`; per leaf column `nullCount`, `minValues`,
//! `maxValues`, keyed by physical names: "Reader Requirements for Column Mapping"), "Delta Data
//! Type to Parquet Type Mappings", "Column Mapping" (a file's columns are found by physical name,
//! or by parquet field id in mode `id`, as readers find them: [`find_field`]).
//!
//! A file gets the statistics deltalog's own writer ([`crate::stats::collect`]) gives the same
//! rows, as far as its footer knows them, and the same leaves (the table's
//! `delta.dataSkippingNumIndexedCols` / `delta.dataSkippingStatsColumns`, widened to the
//! clustering columns, partition columns excluded): `numRecords` is the sum of the row groups'
//! rows; `nullCount` the sum of the column chunks' null counts; `minValues` / `maxValues` the
//! smallest row-group minimum and the largest maximum, converted to the table's type and cut
//! as the writer cuts them (strings to a 32-character prefix, timestamps down to
//! milliseconds, decimals that no double holds exactly left out). A column the file lacks
//! reads as nulls: its `nullCount` is `numRecords`. No data page is read, so what the footer
//! does not say is left out rather than guessed:
//!
//! - min/max when a row group that holds values has none (statistics disabled or dropped), for
//!   INT96 timestamps (their order is undefined), for strings described only by the deprecated
//!   `min`/`max` fields (signed byte order in old writers), and for floats whose footer bound is
//!   NaN or that the footer counts NaNs in;
//! - `nullCount` when a row group lacks it, and for arrays and maps (a footer counts null
//!   elements; Delta counts null arrays).
//!
//! Footers count NaN only where they say so (parquet's `nan_count`): the float bounds of other
//! files bound their numbers only, which deltalog's skipping allows for (a float maximum never
//! skips `>` comparisons, see [`crate::scan::skipping`]).
//!
//! The footer must fit the table's schema: every column of the file is a data column of the
//! table (or a materialized partition or row tracking column), every column read as the table's
//! type ([`to_logical`]'s rules), NOT NULL columns present and without nulls. Anything else is
//! a [`DeltaError::CorruptDataFile`] naming the file and the rule.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{new_empty_array, Array, ArrayRef, AsArray, TimestampMicrosecondArray};
use arrow::compute::{cast_with_options, concat, CastOptions};
use arrow::datatypes::{DataType, Field, FieldRef, Fields, Int64Type, Schema, SchemaRef, TimeUnit};
use parquet::arrow::arrow_reader::statistics::StatisticsConverter;
use parquet::basic::{SortOrder, Type as PhysicalType};
use parquet::file::metadata::ParquetMetaData;
use serde_json::Value;

use crate::error::{DeltaError, DeltaResult};
use crate::scan::columns::{find_field, output_field, to_logical};
use crate::scan::{MATERIALIZED_ROW_COMMIT_VERSION, MATERIALIZED_ROW_ID};
use crate::schema::{name_key, ColumnMappingMode};
use crate::snapshot::Snapshot;
use crate::stats::collect::{IndexedColumns, StatsCollector};
use crate::stats::parse::has_min_max;
use crate::writer_features::column_mapping::{physical_name, physical_output_schema};

/// What the statistics of one table's files are taken against: its data columns, the names and
/// types its files hold, and which leaves get statistics.
#[derive(Debug, Clone)]
pub struct FooterStats {
    /// The table's data columns (partition columns excluded), logical, with their metadata.
    logical: Fields,
    /// The same columns as data files hold them (physical names, output types).
    physical: SchemaRef,
    mode: ColumnMappingMode,
    indexed: IndexedColumns,
    /// Top-level file columns allowed besides the data columns (physical names): materialized
    /// partition columns (Iceberg compatibility) and materialized row tracking columns.
    extra: Vec<String>,
}

/// Where a leaf of the statistics is in a file.
#[derive(Debug, Clone)]
struct Located {
    /// Its parquet leaf column and that column's Arrow form; `None` when the file lacks it.
    column: Option<(usize, FieldRef)>,
    /// An array or a map: the footer's null count counts elements.
    repeated: bool,
    /// The column and all its parents are NOT NULL.
    required: bool,
}

/// Parquet leaf columns under an Arrow field derived from a parquet schema.
fn leaf_count(dt: &DataType) -> usize {
    match dt {
        DataType::Struct(fields) => fields.iter().map(|f| leaf_count(f.data_type())).sum(),
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::ListView(f)
        | DataType::LargeListView(f)
        | DataType::FixedSizeList(f, _)
        | DataType::Map(f, _) => leaf_count(f.data_type()),
        _ => 1,
    }
}

/// The index of the first parquet leaf of each of `fields`, the first starting at `first`.
fn leaf_starts(fields: &Fields, first: usize) -> Vec<usize> {
    let mut next = first;
    fields
        .iter()
        .map(|f| {
            let start = next;
            next += leaf_count(f.data_type());
            start
        })
        .collect()
}

/// A statistics reader of parquet leaf `column` (Arrow form `field`) of a file: null counts
/// a footer lacks are unknown, not zero.
fn converter<'a>(
    metadata: &'a ParquetMetaData,
    column: usize,
    field: &'a Field,
) -> parquet::errors::Result<StatisticsConverter<'a>> {
    let orders = metadata.file_metadata().column_orders().map(Vec::as_slice);
    Ok(StatisticsConverter::from_column_index(
        column,
        field,
        metadata.file_metadata().schema_descr(),
    )?
    .with_missing_null_counts_as_zero(false)
    .with_column_orders(orders))
}

/// The null count of parquet leaf `column` over the file (`None`: a row group lacks it).
fn null_count(
    metadata: &ParquetMetaData,
    column: usize,
    field: &Field,
) -> parquet::errors::Result<Option<i64>> {
    let counts =
        converter(metadata, column, field)?.row_group_null_counts(metadata.row_groups().iter())?;
    if counts.null_count() > 0 {
        return Ok(None);
    }
    Ok(counts
        .values()
        .iter()
        .try_fold(0i64, |sum, &n| sum.checked_add(i64::try_from(n).ok()?)))
}

fn strict() -> CastOptions<'static> {
    CastOptions {
        safe: false,
        ..Default::default()
    }
}

/// Footer bounds (row-group minima and maxima in the file's Arrow form) as values of the
/// table's type `target`. `Ok(None)` when they cannot be given exactly in it (the bounds are
/// then left out); an error when a bound, and therefore a value, does not fit the table's type.
fn conform(values: &ArrayRef, target: &DataType) -> Result<Option<ArrayRef>, String> {
    use DataType::*;
    let integer = |t: &DataType| {
        matches!(
            t,
            Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 | UInt64
        )
    };
    let out: ArrayRef = match (values.data_type(), target) {
        (from, to) if from == to => values.clone(),
        (Timestamp(unit, _), Timestamp(TimeUnit::Microsecond, tz)) => {
            // Down to microseconds, rounding towards the past as the writer's cut to
            // milliseconds does (a minimum stays a lower bound, a maximum still truncates to
            // the same millisecond).
            let raw = cast_with_options(values, &Int64, &strict()).map_err(|e| e.to_string())?;
            let micros: TimestampMicrosecondArray = raw
                .as_primitive::<Int64Type>()
                .iter()
                .map(|v| {
                    v.and_then(|v| match unit {
                        TimeUnit::Second => v.checked_mul(1_000_000),
                        TimeUnit::Millisecond => v.checked_mul(1_000),
                        TimeUnit::Microsecond => Some(v),
                        TimeUnit::Nanosecond => Some(v.div_euclid(1_000)),
                    })
                })
                .collect();
            Arc::new(micros.with_timezone_opt(tz.clone()))
        }
        (Date32, Timestamp(TimeUnit::Microsecond, None)) => {
            let days = cast_with_options(values, &Int64, &strict()).map_err(|e| e.to_string())?;
            let micros: TimestampMicrosecondArray = days
                .as_primitive::<Int64Type>()
                .iter()
                .map(|d| d.and_then(|d| d.checked_mul(86_400_000_000)))
                .collect();
            Arc::new(micros)
        }
        (from, to)
            if (integer(from) && (integer(to) || matches!(to, Float64 | Decimal128(_, _))))
                || matches!(
                    (from, to),
                    (Float32, Float64)
                        | (
                            Decimal32(_, _) | Decimal64(_, _) | Decimal128(_, _),
                            Decimal128(_, _)
                        )
                        | (Utf8View | LargeUtf8, Utf8)
                ) =>
        {
            cast_with_options(values, to, &strict())
                .map_err(|e| format!("its values do not fit the table's type {to}: {e}"))?
        }
        _ => return Ok(None),
    };
    // A bound that became null (out of range) is no bound.
    Ok((out.null_count() == values.null_count()).then_some(out))
}

impl FooterStats {
    /// The statistics rules of `snapshot`'s table, as its own writer applies them.
    pub fn of(snapshot: &Snapshot) -> DeltaResult<Self> {
        let schema = snapshot.schema()?;
        let mode = snapshot.column_mapping_mode()?;
        let config = snapshot.configuration();
        let partitions = &snapshot.metadata()?.partition_columns;
        let output = Arc::new(Schema::new(
            schema
                .fields()
                .iter()
                .map(|f| output_field(f))
                .collect::<Vec<_>>(),
        ));
        // The writer's choices (`write::table::write_batches`): leaves counted over the data
        // columns' physical form, clustering columns always indexed.
        let physical = physical_output_schema(&schema, &output, mode)?;
        let indexed = IndexedColumns::for_table(
            &config,
            &physical,
            &crate::layout::clustering::clustering_columns(snapshot)?,
        );
        let data: Vec<usize> = (0..schema.fields().len())
            .filter(|&i| !partitions.contains(schema.field(i).name()))
            .collect();
        let mut extra: Vec<String> = Vec::new();
        if crate::writer_features::iceberg::materializes_partitions(snapshot)? {
            extra.extend(partitions.iter().map(|p| physical_name(&schema, p, mode)));
        }
        for key in [MATERIALIZED_ROW_ID, MATERIALIZED_ROW_COMMIT_VERSION] {
            extra.extend(config.get(key).cloned());
        }
        Ok(FooterStats {
            logical: data.iter().map(|&i| schema.fields()[i].clone()).collect(),
            physical: Arc::new(physical.project(&data)?),
            mode,
            indexed,
            extra,
        })
    }

    /// The `stats` JSON of the file `file` (its name, for errors) whose footer is `metadata`.
    pub fn stats(&self, file: &str, metadata: &ParquetMetaData) -> DeltaResult<Value> {
        let bad = |rule: String| DeltaError::data_file(file, rule);
        let descr = metadata.file_metadata().schema_descr();
        let file_schema = parquet::arrow::parquet_to_arrow_schema(descr, None)
            .map_err(|e| bad(format!("its parquet schema has no Arrow form: {e}")))?;
        let file_fields = file_schema.fields();
        if file_fields
            .iter()
            .map(|f| leaf_count(f.data_type()))
            .sum::<usize>()
            != descr.num_columns()
        {
            return Err(bad(
                "its parquet schema's leaf columns cannot be resolved".into()
            ));
        }

        // The file column of each table column, of the right type.
        let found: Vec<Option<usize>> = self
            .logical
            .iter()
            .map(|l| find_field(file_fields, l, self.mode, &self.logical))
            .collect();
        for (l, i) in self.logical.iter().zip(&found) {
            if let Some(i) = *i {
                let probe = new_empty_array(file_fields[i].data_type());
                to_logical(&probe, l.data_type(), self.mode).map_err(|e| {
                    bad(format!(
                        "column {:?} does not fit the table's schema: {e}",
                        l.name()
                    ))
                })?;
            }
        }
        // Every file column belongs to the table.
        for (i, f) in file_fields.iter().enumerate() {
            let claimed = found.contains(&Some(i));
            let allowed = self.extra.iter().any(|e| name_key(e) == name_key(f.name()));
            if !claimed && !allowed {
                return Err(bad(format!(
                    "column {:?} is not a data column of the table (files hold the table's \
                     data columns only, by physical name under column mapping, and no \
                     partition columns: \"Data Files\", \"Column Mapping\")",
                    f.name()
                )));
            }
        }

        let mut located = HashMap::new();
        let starts = leaf_starts(file_fields, 0);
        for ((l, p), found) in self.logical.iter().zip(self.physical.fields()).zip(&found) {
            let at = found.map(|i| (&file_fields[i], starts[i]));
            let mut path = Vec::new();
            self.locate(l, p, at, &mut path, true, &mut located)
                .map_err(bad)?;
        }

        let row_groups = metadata.row_groups();
        let rows: Vec<i64> = row_groups.iter().map(|rg| rg.num_rows()).collect();
        let num_records = rows
            .iter()
            .try_fold(0i64, |sum, &r| {
                (r >= 0).then(|| sum.checked_add(r)).flatten()
            })
            .ok_or_else(|| bad("its row groups' row counts are invalid".into()))?;
        let null_counts = |column: usize, field: &FieldRef| {
            null_count(metadata, column, field)
                .map_err(|e| bad(format!("its footer's null counts are unreadable: {e}")))
        };

        // NOT NULL columns hold no nulls.
        for (path, at) in &located {
            if let (true, false, Some((column, field))) = (at.required, at.repeated, &at.column) {
                if let Some(n @ 1..) = null_counts(*column, field)? {
                    return Err(bad(format!(
                        "column {:?} is NOT NULL in the table but the file holds {n} nulls \
                         in it",
                        path.join(".")
                    )));
                }
            }
        }

        let mut collector = StatsCollector::new(&self.physical, &self.indexed);
        collector.add_rows(usize::try_from(num_records).unwrap_or(usize::MAX));
        let paths: Vec<Vec<String>> = collector.leaf_paths().map(<[String]>::to_vec).collect();
        for (index, path) in paths.iter().enumerate() {
            let at = located.get(path).ok_or_else(|| {
                DeltaError::Internal(format!("statistics leaf {} not located", path.join(".")))
            })?;
            let (nulls, values) = match &at.column {
                None => (Some(num_records), None),
                Some(_) if at.repeated => (None, None),
                Some((column, field)) => {
                    let nulls = null_counts(*column, field)?;
                    let target = self.leaf_type(path).ok_or_else(|| {
                        DeltaError::Internal(format!("no type for leaf {}", path.join(".")))
                    })?;
                    let values = if has_min_max(&target) {
                        self.bounds(file, metadata, *column, field, &target, &rows)?
                    } else {
                        None
                    };
                    (nulls, values)
                }
            };
            collector
                .set_leaf(index, values.as_ref(), nulls)
                .map_err(|e| bad(format!("column {:?}: {e}", path.join("."))))?;
        }
        Ok(collector.finish())
    }

    /// Locates the statistics leaves of the table column `logical` (physical form `physical`)
    /// in a file: `at` is the file's field and its first parquet leaf, `None` when the file
    /// lacks it.
    fn locate(
        &self,
        logical: &Field,
        physical: &Field,
        at: Option<(&FieldRef, usize)>,
        path: &mut Vec<String>,
        parents_required: bool,
        out: &mut HashMap<Vec<String>, Located>,
    ) -> Result<(), String> {
        path.push(physical.name().clone());
        let required = parents_required && !logical.is_nullable();
        if at.is_none() && !logical.is_nullable() && parents_required {
            return Err(format!(
                "it lacks column {:?}, which the table declares NOT NULL",
                path.join(".")
            ));
        }
        match (logical.data_type(), physical.data_type()) {
            (DataType::Struct(l_children), DataType::Struct(p_children)) => {
                let file_children = match at.map(|(f, start)| (f.data_type(), start)) {
                    Some((DataType::Struct(children), start)) => Some((children, start)),
                    _ => None,
                };
                let starts = file_children.map(|(c, start)| (c, leaf_starts(c, start)));
                for (l, p) in l_children.iter().zip(p_children.iter()) {
                    let child = starts.as_ref().and_then(|(children, starts)| {
                        find_field(children, l, self.mode, l_children)
                            .map(|i| (&children[i], starts[i]))
                    });
                    self.locate(l, p, child, path, required, out)?;
                }
            }
            (dt, _) => {
                let column = at.map(|(f, start)| (start, f.clone()));
                out.insert(
                    path.clone(),
                    Located {
                        column,
                        repeated: matches!(
                            dt,
                            DataType::List(_) | DataType::LargeList(_) | DataType::Map(_, _)
                        ),
                        required,
                    },
                );
            }
        }
        path.pop();
        Ok(())
    }

    /// The type of the leaf at `path` (physical names) in the files' form.
    fn leaf_type(&self, path: &[String]) -> Option<DataType> {
        let (first, rest) = path.split_first()?;
        let mut dt = self.physical.field_with_name(first).ok()?.data_type();
        for name in rest {
            let DataType::Struct(children) = dt else {
                return None;
            };
            dt = children.iter().find(|c| c.name() == name)?.data_type();
        }
        Some(dt.clone())
    }

    /// The footer's bounds of parquet leaf `column` (Arrow form `field`) over the whole file,
    /// as values of `target`: every row group's minimum and maximum, or `None` when they are
    /// not all known (see the module documentation). `rows`: the row groups' row counts.
    fn bounds(
        &self,
        file: &str,
        metadata: &ParquetMetaData,
        column: usize,
        field: &FieldRef,
        target: &DataType,
        rows: &[i64],
    ) -> DeltaResult<Option<ArrayRef>> {
        let bad = |rule: String| DeltaError::data_file(file, rule);
        let descr = metadata.file_metadata().schema_descr().column(column);
        if descr.physical_type() == PhysicalType::INT96 {
            return Ok(None);
        }
        let row_groups = metadata.row_groups();
        let chunk_stats = |r: usize| row_groups[r].column(column).statistics();
        // Deprecated `min`/`max` fields (a footer without `min_value`/`max_value`) were
        // compared signed by old writers: no bounds for unsigned orders (strings).
        let deprecated = |r: usize| {
            chunk_stats(r).is_some_and(|s| {
                s.is_min_max_deprecated()
                    && (s.min_bytes_opt().is_some() || s.max_bytes_opt().is_some())
            })
        };
        if descr.sort_order() == SortOrder::UNSIGNED && (0..row_groups.len()).any(deprecated) {
            return Ok(None);
        }
        let converter = converter(metadata, column, field)
            .map_err(|e| bad(format!("its footer's statistics are unreadable: {e}")))?;
        let unreadable = |e: parquet::errors::ParquetError| {
            bad(format!("its footer's statistics are unreadable: {e}"))
        };
        let nans = converter
            .row_group_nan_counts(row_groups.iter())
            .map_err(unreadable)?;
        if nans.iter().any(|n| n.is_some_and(|n| n > 0)) {
            return Ok(None);
        }
        let mins = converter
            .row_group_mins(row_groups.iter())
            .map_err(unreadable)?;
        let maxes = converter
            .row_group_maxes(row_groups.iter())
            .map_err(unreadable)?;
        let nulls = converter
            .row_group_null_counts(row_groups.iter())
            .map_err(unreadable)?;
        for (r, &n) in rows.iter().enumerate() {
            // A row group without values has no bounds, and needs none.
            let all_null = n == 0 || (nulls.is_valid(r) && i64::try_from(nulls.value(r)) == Ok(n));
            if !all_null && (mins.is_null(r) || maxes.is_null(r)) {
                return Ok(None);
            }
        }
        let both = concat(&[mins.as_ref(), maxes.as_ref()])?;
        conform(&both, target).map_err(|e| {
            bad(format!(
                "column {:?}: {e} (the file does not fit the table's schema)",
                field.name()
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{
        Int32Array, Int64Array, StringViewArray, TimestampMillisecondArray,
        TimestampNanosecondArray,
    };

    #[test]
    fn timestamps_become_microseconds_rounded_to_the_past() {
        let ns: ArrayRef = Arc::new(
            TimestampNanosecondArray::from(vec![Some(-1_000_001), None, Some(1_999)])
                .with_timezone("+00:00"),
        );
        let target = DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
        let out = conform(&ns, &target).unwrap().unwrap();
        assert_eq!(out.data_type(), &target);
        let micros = out.as_primitive::<arrow::datatypes::TimestampMicrosecondType>();
        assert_eq!(micros.value(0), -1_001);
        assert!(micros.is_null(1));
        assert_eq!(micros.value(2), 1);
        // Milliseconds past what microseconds hold: no bounds.
        let ms: ArrayRef = Arc::new(TimestampMillisecondArray::from(vec![i64::MAX / 10]));
        let ntz = DataType::Timestamp(TimeUnit::Microsecond, None);
        assert!(conform(&ms, &ntz).unwrap().is_none());
    }

    #[test]
    fn bounds_convert_only_where_values_keep_their_meaning() {
        let wide: ArrayRef = Arc::new(Int64Array::from(vec![1, i64::from(i32::MAX) + 1]));
        // A bound outside the table's integer type: the file's values do not fit it.
        assert!(conform(&wide, &DataType::Int32).is_err());
        let narrow: ArrayRef = Arc::new(Int32Array::from(vec![-3, 4]));
        let out = conform(&narrow, &DataType::Int64).unwrap().unwrap();
        assert_eq!(out.as_primitive::<Int64Type>().values(), &[-3, 4]);
        let view: ArrayRef = Arc::new(StringViewArray::from(vec!["a", "b"]));
        assert_eq!(
            conform(&view, &DataType::Utf8)
                .unwrap()
                .unwrap()
                .data_type(),
            &DataType::Utf8
        );
        // No conversion a reader would not make: no bounds, no error.
        assert!(conform(&narrow, &DataType::Utf8).unwrap().is_none());
    }

    #[test]
    fn leaves_are_counted_as_parquet_lays_them_out() {
        let inner = Fields::from(vec![
            Field::new("a", DataType::Int64, true),
            Field::new_list("l", Field::new_list_field(DataType::Utf8, true), true),
        ]);
        let fields = Fields::from(vec![
            Field::new("x", DataType::Int32, true),
            Field::new("s", DataType::Struct(inner), true),
            Field::new("y", DataType::Int32, true),
        ]);
        assert_eq!(leaf_starts(&fields, 0), vec![0, 1, 3]);
        assert_eq!(leaf_count(&DataType::Struct(fields)), 4);
    }
}
