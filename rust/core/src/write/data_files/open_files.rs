//! The files being written: where their bytes go (a local file, or a buffer put to the object
//! store when closed), opened under unique names in their partition's directory ("Data
//! Files"), closed with their statistics ("Per-file Statistics") and, when they hold floats,
//! their footer rewritten ([`crate::stats::float_footer`]); each closed file becomes a
//! [`WrittenFile`].

use arrow::datatypes::DataType;
use parquet::arrow::ArrowWriter;
use parquet::file::writer::SerializedFileWriter;

use crate::error::{DeltaError, DeltaResult};
use crate::stats::collect::StatsCollector;
use crate::stats::float_footer;
use crate::write::partitions::{partition_directory, path_uri};

use super::row_groups::Key;
use super::{DataFileOptions, DataFileWriter, WrittenFile};

/// Where an open file's bytes go: straight to a local file (memory stays bounded by the row
/// groups being encoded), or a buffer put to an object store when the file is closed.
pub(super) enum Sink {
    Local(std::io::BufWriter<std::fs::File>),
    Memory(Vec<u8>),
}

impl std::io::Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Sink::Local(f) => f.write(buf),
            Sink::Memory(v) => v.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Local(f) => f.flush(),
            Sink::Memory(_) => Ok(()),
        }
    }
}

/// The file a partition's rows are going to.
pub(super) struct OpenFile {
    pub(super) writer: SerializedFileWriter<Sink>,
    pub(super) stats: StatsCollector,
    /// The table-relative path the file gets.
    pub(super) relative: String,
    pub(super) row_groups: usize,
}

pub(super) fn has_floats(dt: &DataType) -> bool {
    match dt {
        DataType::Float16 | DataType::Float32 | DataType::Float64 => true,
        DataType::Struct(fields) => fields.iter().any(|f| has_floats(f.data_type())),
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::ListView(f)
        | DataType::LargeListView(f)
        | DataType::FixedSizeList(f, _)
        | DataType::Map(f, _) => has_floats(f.data_type()),
        _ => false,
    }
}

impl DataFileWriter {
    /// A new file for partition `key`.
    pub(super) fn open_file(&self, key: &Key) -> DeltaResult<OpenFile> {
        let partition_values = self
            .partitions
            .get(key)
            .map(|p| p.partition_values.clone())
            .unwrap_or_default();
        let relative = file_path(&self.options, &partition_values);
        // Removed again if the operation fails or is interrupted before its commit point.
        crate::interrupt::created(&self.storage, &relative);
        let sink = match self.storage.file_location(&relative)? {
            crate::storage::FileLocation::Local(path) => {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| write_error(&relative, e))?;
                }
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .read(true)
                    .create_new(true)
                    .open(&path)
                    .map_err(|e| write_error(&relative, e))?;
                Sink::Local(std::io::BufWriter::with_capacity(1 << 20, file))
            }
            crate::storage::FileLocation::Store(_) => Sink::Memory(Vec::new()),
        };
        let (writer, _) =
            ArrowWriter::try_new(sink, self.file_schema.clone(), Some((*self.props).clone()))?
                .into_serialized_writer()?;
        Ok(OpenFile {
            writer,
            stats: StatsCollector::new(&self.stats_schema, &self.options.indexed),
            relative,
            row_groups: 0,
        })
    }

    /// Closes the open file of partition `key`, if any.
    pub(super) async fn close_file(&mut self, key: &Key) -> DeltaResult<()> {
        let Some(partition) = self.partitions.get_mut(key) else {
            return Ok(());
        };
        let Some(file) = partition.file.take() else {
            return Ok(());
        };
        let partition_values = partition.partition_values.clone();
        let OpenFile {
            writer,
            stats,
            relative,
            ..
        } = file;
        let name = relative.clone();
        let floats = self.floats;
        let (sink, stats) = tokio::task::spawn_blocking(move || {
            let stats = stats.finish().to_string();
            let mut sink = writer.into_inner()?;
            std::io::Write::flush(&mut sink).map_err(|e| write_error(&name, e))?;
            if floats {
                fix_float_statistics(&mut sink, &name)?;
            }
            Ok::<_, DeltaError>((sink, stats))
        })
        .await
        .map_err(|e| DeltaError::Internal(format!("closing a data file failed: {e}")))??;
        let size = match sink {
            Sink::Local(file) => {
                let file = file
                    .into_inner()
                    .map_err(|e| write_error(&relative, e.into_error()))?;
                file.metadata()
                    .map_err(|e| write_error(&relative, e))?
                    .len()
            }
            Sink::Memory(bytes) => {
                let size = bytes.len() as u64;
                self.storage.put_file(&relative, bytes.into()).await?;
                size
            }
        };
        let modification_time = chrono::Utc::now().timestamp_millis();
        self.written.push(WrittenFile {
            path: path_uri(&relative),
            partition_values: partition_values.into_iter().collect(),
            size,
            modification_time,
            stats,
        });
        Ok(())
    }
}

/// Rewrites a finished file's footer so that its float statistics are usable by every reader
/// ([`crate::stats::float_footer`]).
fn fix_float_statistics(sink: &mut Sink, name: &str) -> DeltaResult<()> {
    use std::io::{Read, Seek, SeekFrom, Write};
    let bad = |e: String| DeltaError::Internal(format!("rewriting the footer of {name}: {e}"));
    match sink {
        Sink::Memory(bytes) => {
            float_footer::rewrite_file(bytes).map_err(bad)?;
        }
        Sink::Local(writer) => {
            let file = writer.get_mut();
            let len = file
                .seek(SeekFrom::End(0))
                .map_err(|e| write_error(name, e))?;
            let mut tail8 = [0u8; 8];
            file.seek(SeekFrom::Start(len.saturating_sub(8)))
                .map_err(|e| write_error(name, e))?;
            file.read_exact(&mut tail8)
                .map_err(|e| write_error(name, e))?;
            let meta_len = u64::from(u32::from_le_bytes([tail8[0], tail8[1], tail8[2], tail8[3]]));
            let start = len
                .checked_sub(8 + meta_len)
                .ok_or_else(|| bad("the footer length exceeds the file".into()))?;
            let mut tail = vec![0u8; (len - start) as usize];
            file.seek(SeekFrom::Start(start))
                .map_err(|e| write_error(name, e))?;
            file.read_exact(&mut tail)
                .map_err(|e| write_error(name, e))?;
            if !float_footer::rewrite_file(&mut tail).map_err(bad)? {
                return Ok(());
            }
            file.set_len(start).map_err(|e| write_error(name, e))?;
            file.seek(SeekFrom::Start(start))
                .map_err(|e| write_error(name, e))?;
            file.write_all(&tail).map_err(|e| write_error(name, e))?;
            file.flush().map_err(|e| write_error(name, e))?;
        }
    }
    Ok(())
}

/// The table-relative path of a new file: `[<directory>/][<partition dirs>/]<prefix>-<uuid>...`.
fn file_path(options: &DataFileOptions, partition_values: &[(String, Option<String>)]) -> String {
    let name = format!(
        "{}-{}.c000.snappy.parquet",
        options.file_prefix,
        uuid::Uuid::new_v4()
    );
    let mut relative = if partition_values.is_empty() {
        name
    } else {
        format!("{}/{name}", partition_directory(partition_values))
    };
    if let Some(dir) = &options.directory {
        relative = format!("{dir}/{relative}");
    }
    relative
}

fn write_error(path: &str, e: std::io::Error) -> DeltaError {
    DeltaError::Storage(object_store::Error::Generic {
        store: "LocalFileSystem",
        source: format!("writing {path}: {e}").into(),
    })
}
