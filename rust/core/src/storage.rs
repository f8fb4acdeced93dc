//! Where a table lives: an [`ObjectStore`] plus the table root inside it.
//!
//! Local paths and `file://` URIs use the local file system; `s3://`, `gs://`, `az://`,
//! `abfs(s)://` and `http(s)://` go through `object_store`'s builders with `storage_options`
//! passed through unchanged.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};
use url::Url;

use crate::error::{DeltaError, DeltaResult};

/// Where a file named by the log is, for reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileLocation {
    /// A file of the local file system.
    Local(std::path::PathBuf),
    /// An object of the table's store.
    Store(Path),
}

/// A table's storage: the store and the table root path within it.
#[derive(Debug, Clone)]
pub struct Storage {
    store: Arc<dyn ObjectStore>,
    /// The same store when it is the local file system.
    local: Option<Arc<LocalFileSystem>>,
    root: Path,
    url: Url,
}

/// Turns a user-supplied location (plain path or URI) into a URL.
pub fn location_to_url(location: &str) -> DeltaResult<Url> {
    if location.is_empty() {
        return Err(DeltaError::InvalidArgument("empty table location".into()));
    }
    // A Windows drive letter or a bare path is not a URI scheme.
    let has_scheme = location
        .split_once("://")
        .map(|(s, _)| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '+'))
        .unwrap_or(false);
    if has_scheme {
        return Url::parse(location)
            .map_err(|e| DeltaError::InvalidArgument(format!("invalid URI {location}: {e}")));
    }
    let path = std::path::Path::new(location);
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|e| DeltaError::InvalidArgument(format!("no current directory: {e}")))?
            .join(path)
    };
    // Resolve `..` and symlinks where the directory exists; keep it as given otherwise.
    let absolute = std::fs::canonicalize(&absolute).unwrap_or(absolute);
    Url::from_directory_path(&absolute)
        .map_err(|_| DeltaError::InvalidArgument(format!("cannot turn {location} into a file URL")))
}

impl Storage {
    /// Opens the storage behind `location` with `options` (credentials, endpoints, ...).
    pub fn open(location: &str, options: &HashMap<String, String>) -> DeltaResult<Self> {
        let mut url = location_to_url(location)?;
        if !url.path().ends_with('/') {
            let p = format!("{}/", url.path());
            url.set_path(&p);
        }
        let mut local = None;
        let (store, root): (Arc<dyn ObjectStore>, Path) = if url.scheme() == "file" {
            let fs_path = url
                .to_file_path()
                .map_err(|_| DeltaError::InvalidArgument(format!("invalid file URL {url}")))?;
            let root = Path::from_absolute_path(&fs_path).map_err(|e| {
                DeltaError::InvalidArgument(format!(
                    "invalid local path {}: {e}",
                    fs_path.display()
                ))
            })?;
            let fs = Arc::new(LocalFileSystem::new());
            local = Some(fs.clone());
            (fs, root)
        } else {
            let (store, root) = object_store::parse_url_opts(&url, options.iter())?;
            (Arc::from(store), root)
        };
        Ok(Storage {
            store,
            local,
            root,
            url,
        })
    }

    /// The table root as a URL ending in `/`.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The underlying object store.
    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    /// The table root inside the store.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `_delta_log/` under the table root.
    pub fn log_dir(&self) -> Path {
        self.root.clone().join("_delta_log")
    }

    /// A path inside `_delta_log/` (may contain `/`, e.g. `_sidecars/x.parquet`).
    pub fn log_path(&self, relative: &str) -> Path {
        relative
            .split('/')
            .fold(self.log_dir(), |p, part| p.join(part))
    }

    /// The path of a table-relative file (already URI-decoded), e.g. a data file.
    pub fn table_path(&self, relative: &str) -> Path {
        relative
            .split('/')
            .filter(|s| !s.is_empty())
            .fold(self.root.clone(), |p, part| p.join(part))
    }

    /// Where the file at `path` is: a URI-decoded path from the log, relative to the table
    /// root or absolute (a path, `file:` URI or a URI of this table's store). Names are taken
    /// verbatim: a `%` in a decoded path is a `%` in the file name (Hive-style partition
    /// directories such as `ts=2020-01-01 08%3A09%3A10` exist on disk with the escape).
    pub fn file_location(&self, path: &str) -> DeltaResult<FileLocation> {
        let outside = || {
            DeltaError::Unsupported(format!(
                "file {path} is outside the table's store ({})",
                self.url
            ))
        };
        let is_uri = path.contains("://") || path.starts_with("file:");
        if path.starts_with('/') || is_uri {
            if self.local.is_some() {
                let local = match path.strip_prefix("file:") {
                    Some(rest) => {
                        // `file:/p`, `file:///p` and `file://localhost/p` name `/p`.
                        let rest = rest.strip_prefix("//localhost").unwrap_or(rest);
                        format!("/{}", rest.trim_start_matches('/'))
                    }
                    None if path.starts_with('/') => path.to_string(),
                    None => return Err(outside()),
                };
                return Ok(FileLocation::Local(local.into()));
            }
            return self
                .resolve_absolute(path)
                .map(FileLocation::Store)
                .ok_or_else(outside);
        }
        if path.split('/').any(|part| part == "..") {
            return Err(outside());
        }
        if self.local.is_some() {
            let root = self.url.to_file_path().map_err(|_| {
                DeltaError::InvalidArgument(format!("invalid file URL {}", self.url))
            })?;
            let file = path
                .split('/')
                .filter(|s| !s.is_empty())
                .fold(root, |p, part| p.join(part));
            return Ok(FileLocation::Local(file));
        }
        // Object keys verbatim where they are valid paths; escaped otherwise.
        let joined = format!("{}/{}", self.root.as_ref().trim_end_matches('/'), path);
        Ok(FileLocation::Store(
            Path::parse(joined.trim_start_matches('/')).unwrap_or_else(|_| self.table_path(path)),
        ))
    }

    /// Writes a new file at the table-relative `path` (names verbatim, as
    /// [`Storage::file_location`] reads them), creating directories as needed.
    pub async fn put_file(&self, path: &str, bytes: bytes::Bytes) -> DeltaResult<()> {
        match self.file_location(path)? {
            FileLocation::Local(file) => tokio::task::spawn_blocking(move || {
                if let Some(dir) = file.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                std::fs::write(&file, &bytes)
            })
            .await
            .map_err(|e| DeltaError::Internal(format!("writing a file failed: {e}")))?
            .map_err(|e| {
                DeltaError::Storage(object_store::Error::Generic {
                    store: "LocalFileSystem",
                    source: format!("writing {path}: {e}").into(),
                })
            }),
            FileLocation::Store(location) => {
                self.store.put(&location, bytes.into()).await?;
                Ok(())
            }
        }
    }

    /// The location of an absolute URI or path inside this table's store, when it is one.
    pub fn resolve_absolute(&self, location: &str) -> Option<Path> {
        let url = if location.starts_with('/') {
            Url::from_file_path(location).ok()?
        } else {
            Url::parse(location).ok()?
        };
        if url.scheme() != self.url.scheme() || url.host_str() != self.url.host_str() {
            return None;
        }
        if url.scheme() == "file" {
            Path::from_absolute_path(url.to_file_path().ok()?).ok()
        } else {
            Path::from_url_path(url.path()).ok()
        }
    }

    /// Reads a whole object.
    pub async fn get(&self, path: &Path) -> Result<Bytes, object_store::Error> {
        self.store.get(path).await?.bytes().await
    }

    /// Searches a whole object: `f` gets its bytes. Local files are memory-mapped for this
    /// (nothing is copied; a log file is written once and never modified in place, so the
    /// mapping stays valid); other stores read the object.
    pub async fn scan<T, F>(&self, location: &Path, f: F) -> Result<T, object_store::Error>
    where
        T: Send + 'static,
        F: FnOnce(&[u8]) -> T + Send + 'static,
    {
        let Some(file_path) = self.local_path(location) else {
            let bytes = self.get(location).await?;
            return tokio::task::spawn_blocking(move || f(&bytes))
                .await
                .map_err(|e| object_store::Error::Generic {
                    store: "LocalFileSystem",
                    source: Box::new(e),
                });
        };
        let location = location.clone();
        tokio::task::spawn_blocking(move || {
            let io_error = |e: std::io::Error| match e.kind() {
                std::io::ErrorKind::NotFound => object_store::Error::NotFound {
                    path: location.to_string(),
                    source: Box::new(e),
                },
                _ => object_store::Error::Generic {
                    store: "LocalFileSystem",
                    source: format!("reading {}: {e}", file_path.display()).into(),
                },
            };
            let file = std::fs::File::open(&file_path).map_err(io_error)?;
            if file.metadata().map_err(io_error)?.len() == 0 {
                return Ok(f(&[]));
            }
            // SAFETY: read-only mapping of a file that is not modified while mapped (see above);
            // the mapping is dropped before this closure returns.
            let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io_error)?;
            Ok(f(&map))
        })
        .await
        .map_err(|e| object_store::Error::Generic {
            store: "LocalFileSystem",
            source: Box::new(e),
        })?
    }

    /// The file-system path of `location` when the store is the local file system.
    pub fn local_path(&self, location: &Path) -> Option<std::path::PathBuf> {
        self.local.as_ref()?.path_to_filesystem(location).ok()
    }

    /// Metadata of one object.
    pub async fn head(&self, path: &Path) -> Result<ObjectMeta, object_store::Error> {
        self.store.head(path).await
    }

    /// The files directly in `_delta_log/` (commits, checkpoints, checksums, compactions,
    /// `_last_checkpoint`; not the `_staged_commits/` and `_sidecars/` folders, which readers
    /// reach by name) with names after `offset`, in lexicographic order. On a local disk the
    /// directory's names are read first and only the files after `offset` are looked at, so a
    /// listing costs the log's new files, not the whole log. Elsewhere it is the object store's
    /// listing from `offset` (which may include the folders' objects).
    pub async fn list_log_files(&self, offset: Option<&str>) -> DeltaResult<Vec<ObjectMeta>> {
        let dir = self.log_dir();
        let Some(local) = self.local_path(&dir) else {
            return self.list_log(offset).await;
        };
        if !local.is_dir() {
            // Missing, or a file: the recursive listing reports it as object_store does.
            return self.list_log(offset).await;
        }
        let offset = offset.map(str::to_string);
        Ok(on_blocking_thread(move || list_local_dir(&local, &dir, offset)).await?)
    }

    /// On a local disk: the commits `from`, `from + 1`, ... (up to `upto`, and until one is
    /// missing), each preceded by its classic checkpoint if there is one, looked up by name
    /// instead of reading the whole directory (which costs the log's size, not its news).
    /// `None` on other stores, and when more than `cap` commits are found (a listing then
    /// does better: it also finds the newest checkpoint of any kind).
    pub async fn probe_log_commits(
        &self,
        from: u64,
        upto: Option<u64>,
        cap: u64,
    ) -> DeltaResult<Option<Vec<ObjectMeta>>> {
        let dir = self.log_dir();
        let Some(local) = self.local_path(&dir) else {
            return Ok(None);
        };
        let found = on_blocking_thread(move || {
            let mut out = Vec::new();
            let mut version = from;
            while upto.is_none_or(|u| version <= u) {
                if version - from >= cap {
                    return Ok(None);
                }
                let Some(commit) = local_meta(&local, &dir, &format!("{version:020}.json"))? else {
                    break;
                };
                let checkpoint = format!("{version:020}.checkpoint.parquet");
                out.extend(local_meta(&local, &dir, &checkpoint)?);
                out.push(commit);
                version += 1;
            }
            Ok(Some(out))
        })
        .await?;
        Ok(found)
    }

    /// Lists `_delta_log/` (and `_delta_log/_staged_commits/`) with names `>= start_after`
    /// in lexicographic order when `start_after` is given.
    pub async fn list_log(&self, offset: Option<&str>) -> DeltaResult<Vec<ObjectMeta>> {
        if let Ok(local) = self.url.to_file_path() {
            // Without the trailing separator, so that a file is seen as a file.
            let local: std::path::PathBuf = local.components().collect();
            if local.is_file() {
                return Err(DeltaError::TableNotFound {
                    path: self.url.to_string(),
                    reason: "the location is a file, not a table directory".into(),
                });
            }
        }
        let dir = self.log_dir();
        let mut entries: Vec<ObjectMeta> = match offset {
            Some(name) => {
                let off = dir.clone().join(name);
                self.store
                    .list_with_offset(Some(&dir), &off)
                    .try_collect()
                    .await?
            }
            None => self.store.list(Some(&dir)).try_collect().await?,
        };
        entries.sort_by(|a, b| a.location.cmp(&b.location));
        Ok(entries)
    }

    /// The path of `location` relative to `_delta_log/`, if it is inside it.
    pub fn relative_to_log(&self, location: &Path) -> Option<String> {
        let dir = self.log_dir();
        location.prefix_match(&dir).map(|parts| {
            parts
                .map(|p| p.as_ref().to_string())
                .collect::<Vec<_>>()
                .join("/")
        })
    }

    /// Whether the table root exists at all (used to tell "no such directory" apart from
    /// "a directory that is not a table" in error messages).
    pub async fn root_has_entries(&self) -> DeltaResult<bool> {
        let mut stream = self.store.list(Some(&self.root));
        Ok(stream.try_next().await?.is_some())
    }

    /// The names of the directories directly under the root (on object stores: the common
    /// prefixes one level down), sorted. A local directory is listed even when it is empty.
    pub async fn child_directories(&self) -> DeltaResult<Vec<String>> {
        if let Some(local) = self.local_path(&self.root) {
            let entries = match std::fs::read_dir(&local) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
                Err(e) => {
                    return Err(DeltaError::Storage(object_store::Error::Generic {
                        store: "LocalFileSystem",
                        source: Box::new(e),
                    }))
                }
            };
            let mut names = Vec::new();
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    names.push(entry.file_name().to_string_lossy().into_owned());
                }
            }
            names.sort();
            return Ok(names);
        }
        let listing = self.store.list_with_delimiter(Some(&self.root)).await?;
        let mut names: Vec<String> = listing
            .common_prefixes
            .iter()
            .filter_map(|p| p.filename().map(str::to_string))
            .collect();
        names.sort();
        Ok(names)
    }

    /// Deletes every object under the root (and, on a local disk, the directory itself), or
    /// the one object the root names.
    pub async fn delete_all(&self) -> DeltaResult<()> {
        if let Some(local) = self.local_path(&self.root) {
            let removed = if local.is_file() {
                std::fs::remove_file(&local)
            } else {
                std::fs::remove_dir_all(&local)
            };
            return match removed {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(DeltaError::Storage(object_store::Error::Generic {
                        store: "LocalFileSystem",
                        source: Box::new(e),
                    }))
                }
                _ => Ok(()),
            };
        }
        let locations = self
            .store
            .list(Some(&self.root))
            .map_ok(|m| m.location)
            .boxed();
        self.store
            .delete_stream(locations)
            .try_collect::<Vec<Path>>()
            .await?;
        match self.store.delete(&self.root).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

/// The files of the local directory `local` (the object path `dir`) named after `offset`,
/// sorted, with the metadata object_store's `LocalFileSystem` gives them (the same entity tag,
/// so that a listing and a `HEAD` of one file compare equal: [`crate::log::segment::same_object`]).
fn list_local_dir(
    local: &std::path::Path,
    dir: &Path,
    offset: Option<String>,
) -> Result<Vec<ObjectMeta>, object_store::Error> {
    let io = |e: std::io::Error| object_store::Error::Generic {
        store: "LocalFileSystem",
        source: Box::new(e),
    };
    let mut names: Vec<String> = Vec::new();
    for entry in std::fs::read_dir(local).map_err(io)? {
        let entry = entry.map_err(io)?;
        let Ok(name) = entry.file_name().into_string() else {
            continue; // not UTF-8: no log file
        };
        // object_store's in-progress uploads carry a `#` (they are not objects yet).
        if name.contains('#') || offset.as_deref().is_some_and(|o| name.as_str() <= o) {
            continue;
        }
        names.push(name);
    }
    names.sort();
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        if let Some(meta) = local_meta(local, dir, &name)? {
            out.push(meta);
        }
    }
    Ok(out)
}

/// `f`'s result, run on a blocking thread (local file-system calls); a thread that failed is
/// a storage error.
async fn on_blocking_thread<T, F>(f: F) -> Result<T, object_store::Error>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, object_store::Error> + Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| object_store::Error::Generic {
            store: "LocalFileSystem",
            source: Box::new(e),
        })?
}

/// The metadata of the file `name` in the local directory `local` (the store's `dir`), as
/// object_store's local store gives it (its e-tag included); `None` when there is no such file
/// (or it is a folder).
fn local_meta(
    local: &std::path::Path,
    dir: &Path,
    name: &str,
) -> Result<Option<ObjectMeta>, object_store::Error> {
    let io = |e: std::io::Error| object_store::Error::Generic {
        store: "LocalFileSystem",
        source: Box::new(e),
    };
    let metadata = match std::fs::metadata(local.join(name)) {
        Ok(m) if m.is_file() => m,
        Ok(_) => return Ok(None), // a folder (_staged_commits, _sidecars)
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(e)),
    };
    let modified = metadata.modified().map_err(io)?;
    let micros = modified
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_micros();
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&metadata);
    #[cfg(not(unix))]
    let inode = 0u64;
    Ok(Some(ObjectMeta {
        location: dir.clone().join(name),
        last_modified: chrono::DateTime::<chrono::Utc>::from(modified),
        size: metadata.len(),
        e_tag: Some(format!("\"{inode:x}-{micros:x}-{:x}\"", metadata.len())),
        version: None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_locations_keep_names_verbatim() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::open(dir.path().to_str().unwrap(), &HashMap::new()).unwrap();
        let root = dir.path().canonicalize().unwrap();
        assert_eq!(
            storage.file_location("p=08%3A09/a b.parquet").unwrap(),
            FileLocation::Local(root.join("p=08%3A09").join("a b.parquet"))
        );
        for absolute in ["/x/y.parquet", "file:/x/y.parquet", "file:///x/y.parquet"] {
            assert_eq!(
                storage.file_location(absolute).unwrap(),
                FileLocation::Local("/x/y.parquet".into())
            );
        }
        assert!(storage.file_location("s3://bucket/y.parquet").is_err());
        assert!(storage.file_location("../outside.parquet").is_err());
        let remote = Storage::open("s3://bucket/table", &HashMap::new()).unwrap();
        assert_eq!(
            remote.file_location("p=08%3A09/a.parquet").unwrap(),
            FileLocation::Store(Path::parse("table/p=08%3A09/a.parquet").unwrap())
        );
    }

    #[tokio::test]
    async fn local_log_listing_matches_the_object_store() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("_delta_log");
        std::fs::create_dir_all(log.join("_staged_commits")).unwrap();
        for name in [
            "00000000000000000000.json",
            "00000000000000000001.json",
            "00000000000000000001.checkpoint.parquet",
            "00000000000000000002.crc",
            "_last_checkpoint",
        ] {
            std::fs::write(log.join(name), name.as_bytes()).unwrap();
        }
        std::fs::write(
            log.join("_staged_commits/00000000000000000003.u.json"),
            b"{}",
        )
        .unwrap();
        let storage = Storage::open(dir.path().to_str().unwrap(), &HashMap::new()).unwrap();
        let fast = storage.list_log_files(None).await.unwrap();
        let slow: Vec<ObjectMeta> = storage
            .list_log(None)
            .await
            .unwrap()
            .into_iter()
            .filter(|m| !m.location.as_ref().contains("_staged_commits"))
            .collect();
        assert_eq!(fast, slow);
        for meta in &fast {
            assert_eq!(&storage.head(&meta.location).await.unwrap(), meta);
        }
        let after = storage
            .list_log_files(Some("00000000000000000001.checkpoint.parquet"))
            .await
            .unwrap();
        let names: Vec<_> = after.iter().filter_map(|m| m.location.filename()).collect();
        assert_eq!(
            names,
            [
                "00000000000000000001.json",
                "00000000000000000002.crc",
                "_last_checkpoint"
            ]
        );
        let missing = Storage::open(dir.path().join("nope").to_str().unwrap(), &HashMap::new());
        assert!(missing
            .unwrap()
            .list_log_files(None)
            .await
            .unwrap()
            .is_empty());
    }

    #[tokio::test]
    async fn scan_maps_local_files_and_reports_missing_ones() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.json"), b"{\"x\":1}\n").unwrap();
        std::fs::write(dir.path().join("empty.json"), b"").unwrap();
        let storage = Storage::open(dir.path().to_str().unwrap(), &HashMap::new()).unwrap();
        let len = |name: &str| {
            let location = storage.table_path(name);
            let storage = storage.clone();
            async move { storage.scan(&location, |b| b.to_vec()).await }
        };
        assert_eq!(len("a.json").await.unwrap(), b"{\"x\":1}\n");
        assert!(len("empty.json").await.unwrap().is_empty());
        assert!(matches!(
            len("missing.json").await,
            Err(object_store::Error::NotFound { .. })
        ));
    }
}
