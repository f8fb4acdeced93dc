//! Writing a possibly large log file (a checkpoint, a sidecar, a compaction) so that no reader
//! ever sees part of it.
//!
//! Spec: "Checkpoints" ("readers must ignore" incomplete checkpoints; a classic checkpoint may
//! be overwritten by a racing writer, "the latest writer wins"). Local files are written to a
//! hidden temporary name in the same directory (`.<name>.<uuid>.tmp`, which no reader lists as a
//! log file) and renamed into place once complete; object stores get a multipart upload, which
//! becomes visible only when it completes. Either way the bytes are streamed: memory holds at
//! most one upload part, never the whole file.

use std::io::{BufWriter, Write};
use std::path::PathBuf;

use object_store::{ObjectStoreExt, WriteMultipart};

use crate::error::{DeltaError, DeltaResult};
use crate::storage::{FileLocation, Storage};

/// Bytes buffered before they are handed to a multipart upload.
const PART_BYTES: usize = 8 << 20;

/// An output file being written; see the module docs.
pub struct FileSink {
    target: String,
    written: u64,
    kind: SinkKind,
}

enum SinkKind {
    Local {
        file: BufWriter<std::fs::File>,
        tmp: PathBuf,
        path: PathBuf,
    },
    Remote {
        buffer: Vec<u8>,
        upload: Box<WriteMultipart>,
    },
}

fn io_error(target: &str, e: impl std::fmt::Display) -> DeltaError {
    DeltaError::Storage(object_store::Error::Generic {
        store: "LocalFileSystem",
        source: format!("writing {target}: {e}").into(),
    })
}

impl FileSink {
    /// Starts writing the table-relative file `target` (e.g. `_delta_log/<name>`).
    pub async fn create(storage: &Storage, target: &str) -> DeltaResult<Self> {
        let kind = match storage.file_location(target)? {
            FileLocation::Local(path) => {
                let dir = path
                    .parent()
                    .ok_or_else(|| io_error(target, "no parent directory"))?
                    .to_path_buf();
                std::fs::create_dir_all(&dir).map_err(|e| io_error(target, e))?;
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let tmp = dir.join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4()));
                let file = std::fs::File::create(&tmp).map_err(|e| io_error(target, e))?;
                SinkKind::Local {
                    file: BufWriter::with_capacity(1 << 20, file),
                    tmp,
                    path,
                }
            }
            FileLocation::Store(location) => {
                let upload = storage.store().put_multipart(&location).await?;
                SinkKind::Remote {
                    buffer: Vec::new(),
                    upload: Box::new(WriteMultipart::new_with_chunk_size(upload, PART_BYTES)),
                }
            }
        };
        Ok(FileSink {
            target: target.to_string(),
            written: 0,
            kind,
        })
    }

    /// The table-relative path being written.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// Hands buffered bytes to the upload (object stores), waiting when too many parts are in
    /// flight. Call between batches; local files need nothing.
    pub async fn drain(&mut self) -> DeltaResult<()> {
        if let SinkKind::Remote { buffer, upload } = &mut self.kind {
            if buffer.len() >= PART_BYTES {
                upload.write(buffer);
                buffer.clear();
                upload.wait_for_capacity(4).await?;
            }
        }
        Ok(())
    }

    /// Makes the file visible under its name; returns its size in bytes.
    pub async fn commit(self) -> DeltaResult<u64> {
        let target = self.target;
        match self.kind {
            SinkKind::Local { file, tmp, path } => {
                let file = file
                    .into_inner()
                    .map_err(|e| io_error(&target, e.error().to_string()))?;
                file.sync_all().map_err(|e| io_error(&target, e))?;
                drop(file);
                if let Err(e) = std::fs::rename(&tmp, &path) {
                    let _ = std::fs::remove_file(&tmp);
                    return Err(io_error(&target, e));
                }
            }
            SinkKind::Remote { buffer, mut upload } => {
                upload.write(&buffer);
                upload.finish().await?;
            }
        }
        Ok(self.written)
    }

    /// Gives up: removes the temporary file or aborts the upload.
    pub async fn abort(self) {
        match self.kind {
            SinkKind::Local { file, tmp, .. } => {
                drop(file);
                let _ = std::fs::remove_file(tmp);
            }
            SinkKind::Remote { upload, .. } => {
                let _ = upload.abort().await;
            }
        }
    }
}

impl Write for FileSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = match &mut self.kind {
            SinkKind::Local { file, .. } => file.write(buf)?,
            SinkKind::Remote { buffer, .. } => {
                buffer.extend_from_slice(buf);
                buf.len()
            }
        };
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.kind {
            SinkKind::Local { file, .. } => file.flush(),
            SinkKind::Remote { .. } => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn local_file_appears_only_on_commit() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::open(dir.path().to_str().unwrap(), &Default::default()).unwrap();
        let mut sink = FileSink::create(&storage, "_delta_log/x.json")
            .await
            .unwrap();
        sink.write_all(b"hello").unwrap();
        let final_path = dir.path().join("_delta_log/x.json");
        assert!(!final_path.exists());
        assert_eq!(sink.commit().await.unwrap(), 5);
        assert_eq!(std::fs::read(&final_path).unwrap(), b"hello");
        let leftovers: Vec<_> = std::fs::read_dir(dir.path().join("_delta_log"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(leftovers.len(), 1, "{leftovers:?}");

        let mut sink = FileSink::create(&storage, "_delta_log/y.json")
            .await
            .unwrap();
        sink.write_all(b"partial").unwrap();
        sink.abort().await;
        assert_eq!(
            std::fs::read_dir(dir.path().join("_delta_log"))
                .unwrap()
                .count(),
            1
        );
    }
}
