//! Float and double statistics in the form every mainstream parquet reader uses.
//!
//! The parquet crate declares the column order `IEEE_754_TOTAL_ORDER` for FLOAT and DOUBLE
//! columns (a 2025 addition to parquet-format). Readers that predate it (pyarrow up to at
//! least 26, parquet-mr as used by Spark and Trino) see an unknown column order and ignore
//! those columns' min/max, so row-group pruning on float columns is lost everywhere else.
//! Mainstream writers (parquet-mr, parquet-cpp) declare `TYPE_DEFINED_ORDER` and follow its
//! rules for floats ("Statistics" in parquet-format's `parquet.thrift`): NaN never in min or
//! max (no min/max when they would be NaN), a zero minimum written as `-0.0` and a zero
//! maximum as `+0.0`.
//!
//! [`rewrite_footer`] applies exactly that to a finished file's `FileMetaData` (thrift compact
//! protocol): every `IEEE_754_TOTAL_ORDER` becomes `TYPE_ORDER`, and the column-chunk
//! statistics of FLOAT/DOUBLE columns are fixed as above. Everything else is copied byte for
//! byte; the footer is the last part of the file, so no offset changes.

/// Thrift compact protocol type ids.
const BOOL_TRUE: u8 = 1;
const BOOL_FALSE: u8 = 2;
const BYTE: u8 = 3;
const I16: u8 = 4;
const I32: u8 = 5;
const I64: u8 = 6;
const DOUBLE: u8 = 7;
const BINARY: u8 = 8;
const LIST: u8 = 9;
const SET: u8 = 10;
const MAP: u8 = 11;
const STRUCT: u8 = 12;

/// parquet `Type` values.
const PARQUET_FLOAT: i64 = 4;
const PARQUET_DOUBLE: i64 = 5;

/// Nesting bound for skipping unknown values (parquet metadata nests a few levels).
const MAX_NESTING: usize = 64;

type Res<T> = Result<T, String>;

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Res<u8> {
        let b = *self
            .buf
            .get(self.pos)
            .ok_or("the parquet footer ends early")?;
        self.pos += 1;
        Ok(b)
    }

    fn take(&mut self, n: usize) -> Res<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or("the parquet footer ends early")?;
        let out = &self.buf[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn varint(&mut self) -> Res<u64> {
        let mut out = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            out |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(out);
            }
        }
        Err("a malformed varint in the parquet footer".into())
    }

    fn zigzag(&mut self) -> Res<i64> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    /// A field header: `None` at the end of a struct, else (field id, type).
    fn field(&mut self, last: &mut i16) -> Res<Option<(i16, u8)>> {
        let b = self.byte()?;
        if b == 0 {
            return Ok(None);
        }
        let delta = b >> 4;
        let id = if delta == 0 {
            i16::try_from(self.zigzag()?).map_err(|_| "a bad field id in the parquet footer")?
        } else {
            last.checked_add(i16::from(delta))
                .ok_or("a bad field id in the parquet footer")?
        };
        *last = id;
        Ok(Some((id, b & 0x0f)))
    }

    /// Skips a value of type `ty` (`in_collection`: booleans take a byte there).
    fn skip(&mut self, ty: u8, in_collection: bool, depth: usize) -> Res<()> {
        if depth > MAX_NESTING {
            return Err("the parquet footer nests too deeply".into());
        }
        match ty {
            BOOL_TRUE | BOOL_FALSE => {
                if in_collection {
                    self.byte()?;
                }
            }
            BYTE => {
                self.byte()?;
            }
            I16 | I32 | I64 => {
                self.varint()?;
            }
            DOUBLE => {
                self.take(8)?;
            }
            BINARY => {
                let n = usize::try_from(self.varint()?).map_err(|e| e.to_string())?;
                self.take(n)?;
            }
            LIST | SET => {
                let (n, elem) = self.list_header()?;
                for _ in 0..n {
                    self.skip(elem, true, depth + 1)?;
                }
            }
            MAP => {
                let n = self.varint()?;
                if n > 0 {
                    let kv = self.byte()?;
                    for _ in 0..n {
                        self.skip(kv >> 4, true, depth + 1)?;
                        self.skip(kv & 0x0f, true, depth + 1)?;
                    }
                }
            }
            STRUCT => {
                let mut last = 0;
                while let Some((_, t)) = self.field(&mut last)? {
                    self.skip(t, false, depth + 1)?;
                }
            }
            other => return Err(format!("unknown thrift type {other} in the parquet footer")),
        }
        Ok(())
    }

    fn list_header(&mut self) -> Res<(u64, u8)> {
        let b = self.byte()?;
        let n = match b >> 4 {
            15 => self.varint()?,
            n => u64::from(n),
        };
        Ok((n, b & 0x0f))
    }
}

struct Writer {
    out: Vec<u8>,
}

impl Writer {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.out.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.out.push(v as u8);
    }

    fn field(&mut self, last: &mut i16, id: i16, ty: u8) {
        let delta = i32::from(id) - i32::from(*last);
        if (1..=15).contains(&delta) {
            self.out.push(((delta as u8) << 4) | ty);
        } else {
            self.out.push(ty);
            let id = i64::from(id);
            self.varint(((id << 1) ^ (id >> 63)) as u64);
        }
        *last = id;
    }

    fn list_header(&mut self, n: u64, elem: u8) {
        if n < 15 {
            self.out.push(((n as u8) << 4) | elem);
        } else {
            self.out.push(0xf0 | elem);
            self.varint(n);
        }
    }
}

/// Copies a value of type `ty` unchanged.
fn copy(r: &mut Reader<'_>, w: &mut Writer, ty: u8, in_collection: bool) -> Res<()> {
    let start = r.pos;
    r.skip(ty, in_collection, 0)?;
    w.out.extend_from_slice(&r.buf[start..r.pos]);
    Ok(())
}

/// A struct field handler: (reader, writer, last field id written, field id, type); returns
/// false to have the field copied as it is.
type OnField<'f> = dyn FnMut(&mut Reader<'_>, &mut Writer, &mut i16, i16, u8) -> Res<bool> + 'f;

/// Copies a struct, handing each field to `on_field`.
fn copy_struct(r: &mut Reader<'_>, w: &mut Writer, on_field: &mut OnField<'_>) -> Res<()> {
    let (mut read_last, mut write_last) = (0i16, 0i16);
    while let Some((id, ty)) = r.field(&mut read_last)? {
        if !on_field(r, w, &mut write_last, id, ty)? {
            w.field(&mut write_last, id, ty);
            copy(r, w, ty, false)?;
        }
    }
    w.out.push(0);
    Ok(())
}

/// Copies a list of structs, each through `element`.
fn copy_struct_list(
    r: &mut Reader<'_>,
    w: &mut Writer,
    element: &mut dyn FnMut(&mut Reader<'_>, &mut Writer) -> Res<()>,
) -> Res<()> {
    let (n, elem) = r.list_header()?;
    w.list_header(n, elem);
    for _ in 0..n {
        if elem == STRUCT {
            element(r, w)?;
        } else {
            copy(r, w, elem, true)?;
        }
    }
    Ok(())
}

/// `FileMetaData` (thrift compact bytes, without the length and magic) with float statistics
/// every reader uses, see the module documentation.
pub fn rewrite_footer(metadata: &[u8]) -> Result<Vec<u8>, String> {
    let mut r = Reader {
        buf: metadata,
        pos: 0,
    };
    let mut w = Writer {
        out: Vec::with_capacity(metadata.len()),
    };
    copy_struct(&mut r, &mut w, &mut |r, w, last, id, ty| match (id, ty) {
        // row_groups: list<RowGroup>
        (4, LIST) => {
            w.field(last, id, ty);
            copy_struct_list(r, w, &mut |r, w| row_group(r, w))?;
            Ok(true)
        }
        // column_orders: list<ColumnOrder>
        (7, LIST) => {
            w.field(last, id, ty);
            copy_struct_list(r, w, &mut |r, w| column_order(r, w))?;
            Ok(true)
        }
        _ => Ok(false),
    })?;
    if r.pos != metadata.len() {
        return Err("trailing bytes after the parquet footer".into());
    }
    Ok(w.out)
}

/// `ColumnOrder` is a union: field 1 `TYPE_ORDER`, field 2 `IEEE_754_TOTAL_ORDER` (both empty
/// structs).
fn column_order(r: &mut Reader<'_>, w: &mut Writer) -> Res<()> {
    copy_struct(r, w, &mut |r, w, last, id, ty| {
        if id == 2 && ty == STRUCT {
            w.field(last, 1, STRUCT);
            copy(r, w, ty, false)?;
            Ok(true)
        } else {
            Ok(false)
        }
    })
}

fn row_group(r: &mut Reader<'_>, w: &mut Writer) -> Res<()> {
    copy_struct(r, w, &mut |r, w, last, id, ty| {
        // columns: list<ColumnChunk>
        if id == 1 && ty == LIST {
            w.field(last, id, ty);
            copy_struct_list(r, w, &mut |r, w| column_chunk(r, w))?;
            Ok(true)
        } else {
            Ok(false)
        }
    })
}

fn column_chunk(r: &mut Reader<'_>, w: &mut Writer) -> Res<()> {
    copy_struct(r, w, &mut |r, w, last, id, ty| {
        // meta_data: ColumnMetaData
        if id == 3 && ty == STRUCT {
            w.field(last, id, ty);
            column_meta_data(r, w)?;
            Ok(true)
        } else {
            Ok(false)
        }
    })
}

fn column_meta_data(r: &mut Reader<'_>, w: &mut Writer) -> Res<()> {
    let mut physical = None;
    copy_struct(r, w, &mut |r, w, last, id, ty| match (id, ty) {
        // type: the physical type, written before the statistics (field 12)
        (1, I32) => {
            let start = r.pos;
            physical = Some(r.zigzag()?);
            w.field(last, id, ty);
            w.out.extend_from_slice(&r.buf[start..r.pos]);
            Ok(true)
        }
        (12, STRUCT) => {
            let width = match physical {
                Some(PARQUET_FLOAT) => 4,
                Some(PARQUET_DOUBLE) => 8,
                _ => return Ok(false),
            };
            w.field(last, id, ty);
            statistics(r, w, width)?;
            Ok(true)
        }
        _ => Ok(false),
    })
}

/// A float or double statistic's value (`width` bytes, little-endian).
fn float_value(bytes: &[u8], width: usize) -> Option<f64> {
    match width {
        4 => Some(f64::from(f32::from_le_bytes(bytes.try_into().ok()?))),
        8 => Some(f64::from_le_bytes(bytes.try_into().ok()?)),
        _ => None,
    }
}

/// The bytes of `v` as a `width`-byte float.
fn float_bytes(v: f64, width: usize) -> Vec<u8> {
    if width == 4 {
        (v as f32).to_le_bytes().to_vec()
    } else {
        v.to_le_bytes().to_vec()
    }
}

/// `Statistics` of a FLOAT/DOUBLE column chunk: fields 1 `max`, 2 `min` (deprecated), 5
/// `max_value`, 6 `min_value` (binary), 7/8 `is_max/min_value_exact`.
fn statistics(r: &mut Reader<'_>, w: &mut Writer, width: usize) -> Res<()> {
    // Read every field first: a NaN bound drops all bounds.
    let mut fields: Vec<(i16, u8, Vec<u8>)> = Vec::new();
    let mut last = 0;
    while let Some((id, ty)) = r.field(&mut last)? {
        let start = r.pos;
        r.skip(ty, false, 0)?;
        fields.push((id, ty, r.buf[start..r.pos].to_vec()));
    }
    let bound = |raw: &[u8]| -> Res<Option<f64>> {
        let mut br = Reader { buf: raw, pos: 0 };
        let n = usize::try_from(br.varint()?).map_err(|e| e.to_string())?;
        Ok(float_value(br.take(n)?, width))
    };
    let is_bound = |id: i16, ty: u8| ty == BINARY && matches!(id, 1 | 2 | 5 | 6);
    let mut drop_bounds = false;
    for (id, ty, raw) in &fields {
        if is_bound(*id, *ty) && bound(raw)?.is_none_or(f64::is_nan) {
            drop_bounds = true;
        }
    }
    let mut write_last = 0;
    for (id, ty, raw) in fields {
        if drop_bounds && (is_bound(id, ty) || matches!(id, 7 | 8)) {
            continue;
        }
        w.field(&mut write_last, id, ty);
        match bound(&raw) {
            Ok(Some(v)) if is_bound(id, ty) && v == 0.0 => {
                // A zero minimum as -0.0, a zero maximum as +0.0.
                let is_min = matches!(id, 2 | 6);
                let v = if is_min { -0.0 } else { 0.0 };
                w.varint(width as u64);
                w.out.extend_from_slice(&float_bytes(v, width));
            }
            _ => w.out.extend_from_slice(&raw),
        }
    }
    w.out.push(0);
    Ok(())
}

/// Rewrites the footer of the complete parquet file `file` in place (see [`rewrite_footer`]);
/// `Ok(false)` when it was already right.
pub fn rewrite_file(file: &mut Vec<u8>) -> Result<bool, String> {
    let (meta_start, meta) = footer_bounds(file)?;
    let patched = rewrite_footer(&file[meta_start..meta_start + meta])?;
    if patched == file[meta_start..meta_start + meta] {
        return Ok(false);
    }
    file.truncate(meta_start);
    let len = u32::try_from(patched.len()).map_err(|e| e.to_string())?;
    file.extend_from_slice(&patched);
    file.extend_from_slice(&len.to_le_bytes());
    file.extend_from_slice(b"PAR1");
    Ok(true)
}

/// Where the `FileMetaData` of a file (or of its last `tail` bytes) starts, and its length.
pub fn footer_bounds(tail: &[u8]) -> Result<(usize, usize), String> {
    let n = tail.len();
    if n < 12 || &tail[n - 4..] != b"PAR1" {
        return Err("not a parquet file (no PAR1 footer)".into());
    }
    let len = u32::from_le_bytes([tail[n - 8], tail[n - 7], tail[n - 6], tail[n - 5]]) as usize;
    let start = (n - 8)
        .checked_sub(len)
        .ok_or("the parquet footer length exceeds the file")?;
    Ok((start, len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Float32Array, Float64Array, Int64Array, RecordBatch};
    use arrow::datatypes::{DataType, Field, Schema};
    use parquet::arrow::ArrowWriter;
    use parquet::basic::{ColumnOrder, SortOrder};
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::file::statistics::Statistics;
    use std::sync::Arc;

    #[test]
    fn float_statistics_become_type_defined() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("d", DataType::Float64, true),
            Field::new("f", DataType::Float32, true),
            Field::new("nan", DataType::Float64, true),
            Field::new("zero", DataType::Float64, true),
            Field::new("i", DataType::Int64, true),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Float64Array::from(vec![
                    Some(1.5),
                    Some(f64::NAN),
                    Some(-3.0),
                    None,
                ])),
                Arc::new(Float32Array::from(vec![2.5f32, 0.0, 7.0, 1.0])),
                Arc::new(Float64Array::from(vec![f64::NAN; 4])),
                Arc::new(Float64Array::from(vec![0.0, 0.0, 0.5, 0.0])),
                Arc::new(Int64Array::from(vec![1, 2, 3, 4])),
            ],
        )
        .unwrap();
        let mut w = ArrowWriter::try_new(Vec::new(), schema, None).unwrap();
        w.write(&batch).unwrap();
        let mut file = w.into_inner().unwrap();
        assert!(rewrite_file(&mut file).unwrap());
        // Idempotent.
        assert!(!rewrite_file(&mut file.clone()).unwrap());

        let reader = SerializedFileReader::new(bytes::Bytes::from(file)).unwrap();
        let meta = reader.metadata();
        let orders = meta.file_metadata().column_orders().unwrap();
        assert_eq!(
            orders[0],
            ColumnOrder::TYPE_DEFINED_ORDER(SortOrder::SIGNED)
        );
        assert_eq!(
            orders[1],
            ColumnOrder::TYPE_DEFINED_ORDER(SortOrder::SIGNED)
        );
        let stats = |i: usize| meta.row_group(0).column(i).statistics().cloned().unwrap();
        match stats(0) {
            Statistics::Double(s) => {
                assert_eq!(s.min_opt(), Some(&-3.0));
                assert_eq!(s.max_opt(), Some(&1.5));
                assert_eq!(s.null_count_opt(), Some(1));
            }
            other => panic!("{other:?}"),
        }
        match stats(1) {
            Statistics::Float(s) => {
                // A zero minimum is written as -0.0.
                assert_eq!(s.min_opt().map(|v| v.to_bits()), Some((-0.0f32).to_bits()));
                assert_eq!(s.max_opt(), Some(&7.0));
            }
            other => panic!("{other:?}"),
        }
        match stats(2) {
            Statistics::Double(s) => {
                assert!(s.min_opt().is_none() && s.max_opt().is_none(), "{s:?}");
            }
            other => panic!("{other:?}"),
        }
        match stats(3) {
            Statistics::Double(s) => {
                assert_eq!(s.min_opt().map(|v| v.to_bits()), Some((-0.0f64).to_bits()));
                assert_eq!(s.max_opt(), Some(&0.5));
            }
            other => panic!("{other:?}"),
        }
        match stats(4) {
            Statistics::Int64(s) => assert_eq!((s.min_opt(), s.max_opt()), (Some(&1), Some(&4))),
            other => panic!("{other:?}"),
        }
        // The data reads back unchanged.
        let rows: Vec<_> = reader.get_row_iter(None).unwrap().collect();
        assert_eq!(rows.len(), 4);
    }

    #[test]
    fn malformed_footers_are_errors() {
        assert!(rewrite_footer(&[0x19]).is_err());
        assert!(rewrite_footer(&[0x15, 0x80]).is_err());
        assert!(footer_bounds(b"PAR1").is_err());
        assert!(footer_bounds(b"xxxxxxxx\xff\xff\x00\x00PAR1").is_err());
    }
}
