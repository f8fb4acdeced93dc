//! The Z-order curve of OPTIMIZE ZORDER BY and of liquid clustering: a row's key interleaves
//! the bits of its columns' ranks, so that rows close in every column get close keys and a
//! file cut from a key range covers a narrow range of each column (spec "Per-file
//! Statistics": data skipping then prunes files on any of the columns).
//!
//! Ranks, as Delta Spark computes them (`range_partition_id`), come from a sample: each
//! column's sampled values, sorted and deduplicated, give up to [`MAX_RANKS`] boundaries, and
//! a value's rank is the number of boundaries at or below it. Comparing values through the
//! Arrow row format (byte-comparable, nulls first) makes every orderable type work alike.
//! Ranks are scaled to the same number of bits per column before interleaving, so a column
//! with few distinct values does not lose its share of the key.

use arrow::array::{Array, ArrayRef, RecordBatch, UInt32Array, UInt64Array};
use arrow::compute::{concat_batches, take_record_batch, SortOptions};
use arrow::datatypes::SchemaRef;
use arrow::row::{RowConverter, SortField};

use crate::error::{DeltaError, DeltaResult};

/// Ranks per column at most (Delta Spark's default is 1,000 range IDs): ten bits, enough to
/// tell apart far more files than one OPTIMIZE writes.
pub const MAX_RANKS: usize = 1024;
/// Rows a sample keeps (between this and twice this many).
pub const SAMPLE_ROWS: usize = 16 * 1024;
/// Columns a key can interleave (one bit each at least).
pub const MAX_COLUMNS: usize = 64;

/// A systematic sample of a stream of batches: every `stride`-th row, the stride doubling
/// (and every other kept row dropped) whenever the sample outgrows twice its target, so it
/// stays small whatever the input's size. Deterministic: the same input gives the same sample.
pub struct Sampler {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
    rows: usize,
    stride: u64,
    seen: u64,
    target: usize,
}

impl Sampler {
    /// A sampler of batches of `schema` keeping about `target` rows.
    pub fn new(schema: SchemaRef, target: usize) -> Self {
        Sampler {
            schema,
            batches: Vec::new(),
            rows: 0,
            stride: 1,
            seen: 0,
            target: target.max(1),
        }
    }

    /// Rows offered so far.
    pub fn rows_seen(&self) -> u64 {
        self.seen
    }

    /// Offers the rows of `batch`.
    pub fn add(&mut self, batch: &RecordBatch) -> DeltaResult<()> {
        let n = batch.num_rows() as u64;
        let first = (self.stride - self.seen % self.stride) % self.stride;
        let picked: Vec<u32> = (first..n)
            .step_by(self.stride as usize)
            .map(|i| i as u32)
            .collect();
        self.seen += n;
        if picked.is_empty() {
            return Ok(());
        }
        self.rows += picked.len();
        self.batches
            .push(take_record_batch(batch, &UInt32Array::from(picked))?);
        if self.rows > 2 * self.target {
            let all = concat_batches(&self.schema, &self.batches)?;
            let every_other: Vec<u32> = (0..all.num_rows() as u32).step_by(2).collect();
            let halved = take_record_batch(&all, &UInt32Array::from(every_other))?;
            self.rows = halved.num_rows();
            self.batches = vec![halved];
            self.stride *= 2;
        }
        Ok(())
    }

    /// The sampled rows.
    pub fn finish(self) -> DeltaResult<RecordBatch> {
        Ok(concat_batches(&self.schema, &self.batches)?)
    }
}

/// One column's rank boundaries, in row format.
struct Ranks {
    converter: RowConverter,
    /// The first sixteen bytes of each boundary (big-endian, zero-padded): every comparison of
    /// primitive values ends here.
    prefixes: Vec<u128>,
    bounds: Vec<Box<[u8]>>,
}

fn prefix(bytes: &[u8]) -> u128 {
    let mut buf = [0u8; 16];
    let n = bytes.len().min(16);
    buf[..n].copy_from_slice(&bytes[..n]);
    u128::from_be_bytes(buf)
}

impl Ranks {
    /// The number of boundaries at or below `value` (row format bytes).
    fn rank(&self, value: &[u8]) -> usize {
        let p = prefix(value);
        // Boundaries whose prefix is below the value's are below it; ordering by (prefix,
        // bytes) is the bytes' own order, as a smaller zero-padded prefix means a smaller
        // byte string. A branch-free search over the prefixes, then the ties.
        let (mut base, mut len) = (0usize, self.prefixes.len());
        while len > 1 {
            let half = len / 2;
            if self.prefixes[base + half - 1] < p {
                base += half;
            }
            len -= half;
        }
        let mut at = base + usize::from(len == 1 && self.prefixes[base] < p);
        while at < self.prefixes.len()
            && self.prefixes[at] == p
            && self.bounds[at].as_ref() <= value
        {
            at += 1;
        }
        at
    }
}

/// The curve of one OPTIMIZE: the columns' rank boundaries from a sample, and the bits each
/// column gets in a key.
pub struct ZCurve {
    columns: Vec<Ranks>,
    bits: u32,
}

impl ZCurve {
    /// A curve over `sample` (one array per column, the same length).
    pub fn from_sample(sample: &[ArrayRef]) -> DeltaResult<Self> {
        if sample.is_empty() || sample.len() > MAX_COLUMNS {
            return Err(DeltaError::InvalidArgument(format!(
                "Z-order needs 1 to {MAX_COLUMNS} columns, not {}",
                sample.len()
            )));
        }
        let bits = (64 / sample.len() as u32).min(MAX_RANKS.trailing_zeros());
        let most = (1usize << bits) - 1;
        let mut columns = Vec::with_capacity(sample.len());
        for array in sample {
            let converter = RowConverter::new(vec![SortField::new_with_options(
                array.data_type().clone(),
                SortOptions {
                    descending: false,
                    nulls_first: true,
                },
            )])?;
            let rows = converter.convert_columns(std::slice::from_ref(array))?;
            let mut values: Vec<&[u8]> = rows.iter().map(|r| r.data()).collect();
            values.sort_unstable();
            values.dedup();
            let chosen: Vec<&[u8]> = if values.len() <= most {
                values
            } else {
                (0..most)
                    .map(|i| values[(i + 1) * values.len() / (most + 1)])
                    .collect()
            };
            columns.push(Ranks {
                converter,
                prefixes: chosen.iter().map(|b| prefix(b)).collect(),
                bounds: chosen.iter().map(|b| Box::from(*b)).collect(),
            });
        }
        Ok(ZCurve { columns, bits })
    }

    /// The Z-order keys of the rows of `columns` (one array per curve column, in order).
    pub fn keys(&self, columns: &[ArrayRef]) -> DeltaResult<UInt64Array> {
        if columns.len() != self.columns.len() {
            return Err(DeltaError::Internal(format!(
                "a Z-order key of {} columns asked of {}",
                self.columns.len(),
                columns.len()
            )));
        }
        let rows = columns.first().map_or(0, |c| c.len());
        let mut scaled: Vec<Vec<u64>> = Vec::with_capacity(columns.len());
        for (ranks, array) in self.columns.iter().zip(columns) {
            let converted = ranks
                .converter
                .convert_columns(std::slice::from_ref(array))?;
            let buckets = ranks.bounds.len() as u64 + 1;
            let column: Vec<u64> = converted
                .iter()
                .map(|row| ((ranks.rank(row.data()) as u64) << self.bits) / buckets)
                .collect();
            scaled.push(column);
        }
        let keys: Vec<u64> = (0..rows)
            .map(|row| interleave(scaled.iter().map(|c| c[row]), self.bits))
            .collect();
        Ok(UInt64Array::from(keys))
    }

    /// The rank of each value of `array` in the curve's column `column` (for tests).
    #[cfg(test)]
    fn ranks_of(&self, column: usize, array: &ArrayRef) -> Vec<usize> {
        let ranks = &self.columns[column];
        let rows = ranks
            .converter
            .convert_columns(std::slice::from_ref(array))
            .expect("convertible");
        rows.iter().map(|r| ranks.rank(r.data())).collect()
    }
}

/// The bits of `values` (each `bits` wide) interleaved, most significant first: bit `b` of
/// every column, then bit `b - 1` of every column, and so on.
pub fn interleave(values: impl Iterator<Item = u64> + Clone, bits: u32) -> u64 {
    let mut key = 0u64;
    for bit in (0..bits).rev() {
        for v in values.clone() {
            key = (key << 1) | ((v >> bit) & 1);
        }
    }
    key
}

/// `k - 1` boundaries splitting `keys` into `k` ranges of about equal counts (fewer when keys
/// repeat); sorts `keys`.
pub fn quantiles(keys: &mut [u64], k: usize) -> Vec<u64> {
    keys.sort_unstable();
    let mut bounds: Vec<u64> = (1..k)
        .filter_map(|i| keys.get(i * keys.len() / k).copied())
        .collect();
    bounds.dedup();
    bounds
}

/// The range (`0..=bounds.len()`) of `key`: how many boundaries are at or below it.
pub fn range_of(bounds: &[u64], key: u64) -> usize {
    bounds.partition_point(|b| *b <= key)
}

/// Arrays of the named columns of `batch`.
pub fn columns_of(batch: &RecordBatch, names: &[String]) -> DeltaResult<Vec<ArrayRef>> {
    names
        .iter()
        .map(|n| {
            batch.column_by_name(n).cloned().ok_or_else(|| {
                DeltaError::Internal(format!("the Z-order column {n:?} was not read"))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use proptest::prelude::*;
    use std::sync::Arc;

    fn ints(values: &[Option<i64>]) -> ArrayRef {
        Arc::new(Int64Array::from(values.to_vec()))
    }

    #[test]
    fn interleaving_takes_bits_column_by_column() {
        // x = 0b11, y = 0b00 → 1010; x = 0b01, y = 0b10 → 0110.
        assert_eq!(interleave([3u64, 0].into_iter(), 2), 0b1010);
        assert_eq!(interleave([1u64, 2].into_iter(), 2), 0b0110);
    }

    #[test]
    fn ranks_count_the_boundaries_at_or_below_a_value() {
        let sample = ints(&[Some(10), Some(20), Some(20), Some(30), None]);
        let curve = ZCurve::from_sample(&[sample]).expect("curve");
        // Boundaries: null, 10, 20, 30 (nulls first).
        let probe = ints(&[None, Some(5), Some(10), Some(25), Some(30), Some(99)]);
        assert_eq!(curve.ranks_of(0, &probe), vec![1, 1, 2, 3, 4, 4]);
    }

    #[test]
    fn keys_of_a_grid_follow_the_z_curve() {
        // A 4x4 grid of (x, y): the keys visit the four 2x2 quadrants one after the other.
        let xs: Vec<Option<i64>> = (0..16).map(|i| Some(i % 4)).collect();
        let ys: Vec<Option<i64>> = (0..16).map(|i| Some(i / 4)).collect();
        let curve = ZCurve::from_sample(&[ints(&xs), ints(&ys)]).expect("curve");
        let keys = curve.keys(&[ints(&xs), ints(&ys)]).expect("keys");
        let mut order: Vec<usize> = (0..16).collect();
        order.sort_by_key(|&i| keys.value(i));
        let quadrant = |i: usize| (xs[i].unwrap_or(0) / 2, ys[i].unwrap_or(0) / 2);
        for chunk in order.chunks(4) {
            assert!(chunk.iter().all(|&i| quadrant(i) == quadrant(chunk[0])));
        }
    }

    #[test]
    fn strings_and_many_distinct_values_work() {
        let names: Vec<String> = (0..5000).map(|i| format!("name-{i:05}")).collect();
        let array: ArrayRef = Arc::new(StringArray::from(names.clone()));
        let curve = ZCurve::from_sample(std::slice::from_ref(&array)).expect("curve");
        let ranks = curve.ranks_of(0, &array);
        // At most MAX_RANKS - 1 boundaries; ranks ascend with the values.
        assert!(ranks.windows(2).all(|w| w[0] <= w[1]));
        assert!(*ranks.last().unwrap_or(&0) < MAX_RANKS);
        assert!(*ranks.last().unwrap_or(&0) >= MAX_RANKS - 2);
    }

    #[test]
    fn quantiles_split_evenly_and_ranges_cover_everything() {
        let mut keys: Vec<u64> = (0..1000).rev().collect();
        let bounds = quantiles(&mut keys, 4);
        assert_eq!(bounds, vec![250, 500, 750]);
        assert_eq!(range_of(&bounds, 0), 0);
        assert_eq!(range_of(&bounds, 250), 1);
        assert_eq!(range_of(&bounds, 999), 3);
        let mut same = vec![7u64; 100];
        assert_eq!(quantiles(&mut same, 4), vec![7]);
    }

    #[test]
    fn the_sampler_stays_small_and_is_deterministic() {
        let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, true)]));
        let run = || {
            let mut s = Sampler::new(schema.clone(), 100);
            for chunk in 0..50 {
                let values: Vec<Option<i64>> = (0..97).map(|i| Some(chunk * 97 + i)).collect();
                let batch =
                    RecordBatch::try_new(schema.clone(), vec![ints(&values)]).expect("batch");
                s.add(&batch).expect("add");
            }
            assert_eq!(s.rows_seen(), 50 * 97);
            s.finish().expect("sample")
        };
        let a = run();
        assert!(
            a.num_rows() >= 100 && a.num_rows() <= 200,
            "{}",
            a.num_rows()
        );
        assert_eq!(a, run());
        // Evenly spread: the sample's values are one stride apart.
        let values = a
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("ints");
        let stride = values.value(1) - values.value(0);
        assert!(values.values().windows(2).all(|w| w[1] - w[0] == stride));
    }

    proptest! {
        // Ranks are monotone in the value, so keys never invert the order of rows that are
        // ordered in every column.
        #[test]
        fn keys_respect_the_order_of_dominated_rows(
            sample in proptest::collection::vec((any::<i32>(), any::<i32>()), 1..300),
            a in (any::<i32>(), any::<i32>()),
            d in (0i32..1000, 0i32..1000),
        ) {
            let xs = ints(&sample.iter().map(|p| Some(p.0 as i64)).collect::<Vec<_>>());
            let ys = ints(&sample.iter().map(|p| Some(p.1 as i64)).collect::<Vec<_>>());
            let curve = ZCurve::from_sample(&[xs, ys]).expect("curve");
            let b = (a.0 as i64 + d.0 as i64, a.1 as i64 + d.1 as i64);
            let keys = curve
                .keys(&[ints(&[Some(a.0 as i64), Some(b.0)]), ints(&[Some(a.1 as i64), Some(b.1)])])
                .expect("keys");
            prop_assert!(keys.value(0) <= keys.value(1));
        }

        // The search over prefixes agrees with counting the boundaries at or below a value,
        // for strings that share long prefixes too.
        #[test]
        fn ranks_count_boundaries(
            sample in proptest::collection::vec("[ab]{0,20}", 1..200),
            probes in proptest::collection::vec("[ab]{0,20}", 1..50),
        ) {
            let array: ArrayRef = Arc::new(StringArray::from(sample.clone()));
            let curve = ZCurve::from_sample(std::slice::from_ref(&array)).expect("curve");
            let mut distinct = sample.clone();
            distinct.sort();
            distinct.dedup();
            let probe: ArrayRef = Arc::new(StringArray::from(probes.clone()));
            let ranks = curve.ranks_of(0, &probe);
            for (value, rank) in probes.iter().zip(ranks) {
                if distinct.len() < MAX_RANKS {
                    prop_assert_eq!(rank, distinct.iter().filter(|d| *d <= value).count());
                }
            }
        }

        #[test]
        fn quantile_ranges_are_ordered(keys in proptest::collection::vec(any::<u64>(), 1..500), k in 1usize..20) {
            let mut sorted = keys.clone();
            let bounds = quantiles(&mut sorted, k);
            prop_assert!(bounds.len() < k);
            prop_assert!(bounds.windows(2).all(|w| w[0] < w[1]));
            for pair in sorted.windows(2) {
                prop_assert!(range_of(&bounds, pair[0]) <= range_of(&bounds, pair[1]));
            }
        }
    }
}
