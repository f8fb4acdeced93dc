//! Parquet files read through `object_store`: an [`AsyncFileReader`] over a [`crate::Storage`] path.
//!
//! The file size is always known up front (from a listing, an action's `size`, or one `HEAD`),
//! so the footer is fetched with bounded range requests only.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::FutureExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use parquet::arrow::arrow_reader::ArrowReaderOptions;
use parquet::arrow::async_reader::AsyncFileReader;
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader};

/// A parquet file in an object store.
#[derive(Debug, Clone)]
pub struct StoreFileReader {
    store: Arc<dyn ObjectStore>,
    path: Path,
    size: u64,
}

impl StoreFileReader {
    /// A reader of `path`, whose size is `size` bytes.
    pub fn new(store: Arc<dyn ObjectStore>, path: Path, size: u64) -> Self {
        Self { store, path, size }
    }
}

fn external(e: object_store::Error) -> ParquetError {
    ParquetError::External(Box::new(e))
}

impl AsyncFileReader for StoreFileReader {
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, Result<Bytes>> {
        async move {
            self.store
                .get_range(&self.path, range)
                .await
                .map_err(external)
        }
        .boxed()
    }

    fn get_byte_ranges(&mut self, ranges: Vec<Range<u64>>) -> BoxFuture<'_, Result<Vec<Bytes>>> {
        async move {
            self.store
                .get_ranges(&self.path, &ranges)
                .await
                .map_err(external)
        }
        .boxed()
    }

    fn get_metadata<'a>(
        &'a mut self,
        options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, Result<Arc<ParquetMetaData>>> {
        async move {
            let size = self.size;
            let metadata = ParquetMetaDataReader::new()
                .with_arrow_reader_options(options)
                .load_and_finish(self, size)
                .await?;
            Ok(Arc::new(metadata))
        }
        .boxed()
    }
}

/// A local parquet file read with positioned reads (`pread`), page by page.
///
/// The async reader fetches each projected column chunk of a row group whole before decoding
/// it: tens of megabytes per row group of a large checkpoint, in fresh buffers. Decoding a local
/// file through this reader instead reads each page as it is needed, into buffers that are
/// reused, so only the decoded columns occupy memory. Positioned reads share no file cursor,
/// so any number of readers can use one handle.
#[cfg(unix)]
#[derive(Debug, Clone)]
pub struct LocalChunkReader {
    file: Arc<std::fs::File>,
    len: u64,
}

#[cfg(unix)]
impl LocalChunkReader {
    /// Opens `path`.
    pub fn open(path: &std::path::Path) -> std::io::Result<Self> {
        let file = std::fs::File::open(path)?;
        let len = file.metadata()?.len();
        Ok(LocalChunkReader {
            file: Arc::new(file),
            len,
        })
    }
}

/// A [`std::io::Read`] at a position of a [`LocalChunkReader`]'s file.
#[cfg(unix)]
#[derive(Debug)]
pub struct PositionedRead {
    file: Arc<std::fs::File>,
    pos: u64,
}

#[cfg(unix)]
impl std::io::Read for PositionedRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::os::unix::fs::FileExt;
        let n = self.file.read_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

#[cfg(unix)]
impl parquet::file::reader::Length for LocalChunkReader {
    fn len(&self) -> u64 {
        self.len
    }
}

#[cfg(unix)]
impl parquet::file::reader::ChunkReader for LocalChunkReader {
    type T = std::io::BufReader<PositionedRead>;

    fn get_read(&self, start: u64) -> Result<Self::T> {
        Ok(std::io::BufReader::new(PositionedRead {
            file: self.file.clone(),
            pos: start,
        }))
    }

    fn get_bytes(&self, start: u64, length: usize) -> Result<Bytes> {
        use std::io::Read;
        let mut buffer = Vec::with_capacity(length);
        let read = PositionedRead {
            file: self.file.clone(),
            pos: start,
        }
        .take(length as u64)
        .read_to_end(&mut buffer)
        .map_err(|e| ParquetError::External(Box::new(e)))?;
        if read != length {
            return Err(ParquetError::EOF(format!(
                "expected {length} bytes at offset {start}, the file has {read}"
            )));
        }
        Ok(buffer.into())
    }
}
