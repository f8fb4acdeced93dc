//! `deltalog._native`: the thin PyO3 layer over `deltalog-core`.
//!
//! Everything here converts: Python arguments to core calls (run on a shared Tokio runtime with
//! the GIL released), core results to Python objects (Arrow data through the C data interface,
//! zero-copy), and core errors to the exception classes of `deltalog.exceptions`.

mod alter;
mod catalog;
mod codecs;
mod commit;
mod dml;
mod errors;
mod expressions;
mod header;
mod layout;
mod maintenance;
mod runtime;
mod scan;
mod snapshot;
mod table_operations;
mod warnings;
mod write;

use pyo3::prelude::*;

use alter::*;
use codecs::*;
use commit::*;
use dml::*;
use expressions::*;
use header::RawHeader;
use maintenance::*;
use scan::{RawBatchStream, RawScan};
use snapshot::RawSnapshot;
use write::*;

/// Log replay allocates and frees large buffers from several threads at once; the system
/// allocator fragments under that pattern (measured: ~200 MB more peak memory opening a
/// 1M-file log). Every buffer handed to Python is released through the Arrow C data
/// interface's release callback, i.e. by this same allocator.
#[cfg(not(any(windows, target_env = "musl")))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's compile-time options, read before its first allocation (`_RJEM_MALLOC_CONF` in
/// the environment still overrides them). `oversize_threshold:0` keeps large allocations in
/// the ordinary arenas: by default those of 8 MiB and more go to an arena that returns freed
/// memory to the kernel at once, so the column chunks of every row group written and the
/// batches of every log part read were faulted in afresh (measured: a 10M-row append took
/// 1.45 s of CPU instead of 1.06 s, opening a 1M-file checkpoint 0.74 s instead of 0.60 s;
/// peak memory unchanged). `dirty_decay_ms:500` (default 10 s) returns pages freed half a
/// second ago to the kernel: each of the arenas (four per core) otherwise keeps what its
/// threads freed, and those add up in multi-threaded rewrites (measured on 2 cores: OPTIMIZE
/// Z-order of 10M rows peaked at 575 MB instead of 810 MB, compaction at about 350 MB instead
/// of 410 MB, a 10M-row append no slower; `narenas:2` saved as much but slowed that append by
/// a fifth). `percpu_arena:percpu` gives each CPU one arena, taken by whichever thread runs
/// there, instead of four per CPU assigned to threads round-robin: rewrites allocate in one
/// thread (decoding, sorting on the blocking pool) and free in another (the encoder threads),
/// and memory freed to an arena no running thread allocates from was kept until it decayed
/// (measured on 2 cores: OPTIMIZE compaction of 10M rows 137 MB peak instead of 146 MB,
/// Z-order 446 MB instead of 532 MB with a 256 MiB budget, 265 MB instead of 309 MB with
/// 64 MiB; the 10M-row append 1.07 s median of 5 against 1.03 s, within the noise).
#[cfg(not(any(windows, target_env = "musl")))]
#[export_name = "_rjem_malloc_conf"]
pub static MALLOC_CONF: Option<&'static std::ffi::c_char> = {
    const CONF: &std::ffi::CStr = c"oversize_threshold:0,dirty_decay_ms:500,percpu_arena:percpu";
    // SAFETY: a pointer to the first byte of a static, NUL-terminated string.
    Some(unsafe { &*CONF.as_ptr() })
};

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    warnings::install();
    m.add_class::<RawSnapshot>()?;
    m.add_class::<RawHeader>()?;
    m.add_class::<RawScan>()?;
    m.add_class::<RawBatchStream>()?;
    m.add_function(wrap_pyfunction!(json_checksum, m)?)?;
    m.add_function(wrap_pyfunction!(duration_property_ms, m)?)?;
    m.add_function(wrap_pyfunction!(interval_ms, m)?)?;
    m.add_function(wrap_pyfunction!(write_table, m)?)?;
    m.add_function(wrap_pyfunction!(dml::dml, m)?)?;
    m.add_function(wrap_pyfunction!(layout::optimize, m)?)?;
    m.add_function(wrap_pyfunction!(layout::optimize_plan, m)?)?;
    m.add_function(wrap_pyfunction!(layout::optimize_rewrite, m)?)?;
    m.add_function(wrap_pyfunction!(layout::optimize_commit, m)?)?;
    m.add_function(wrap_pyfunction!(table_operations::repair, m)?)?;
    m.add_function(wrap_pyfunction!(
        table_operations::inspect_parquet_directory,
        m
    )?)?;
    m.add_function(wrap_pyfunction!(table_operations::clone_table, m)?)?;
    m.add_function(wrap_pyfunction!(write_files, m)?)?;
    m.add_function(wrap_pyfunction!(add_actions_from_footers, m)?)?;
    m.add_function(wrap_pyfunction!(evolved_metadata, m)?)?;
    m.add_function(wrap_pyfunction!(replace_where_actions, m)?)?;
    m.add_function(wrap_pyfunction!(mask_rows, m)?)?;
    m.add_function(wrap_pyfunction!(write_change_files, m)?)?;
    m.add_function(wrap_pyfunction!(write_rows_with_lineage, m)?)?;
    m.add_function(wrap_pyfunction!(skipping_predicate, m)?)?;
    m.add_function(wrap_pyfunction!(commit_actions, m)?)?;
    m.add_function(wrap_pyfunction!(count_violations, m)?)?;
    m.add_function(wrap_pyfunction!(restore_actions, m)?)?;
    m.add_function(wrap_pyfunction!(merge, m)?)?;
    m.add_function(wrap_pyfunction!(remove_actions, m)?)?;
    m.add_function(wrap_pyfunction!(add_columns, m)?)?;
    m.add_function(wrap_pyfunction!(parse_expression, m)?)?;
    m.add_function(wrap_pyfunction!(dv_serialize, m)?)?;
    m.add_function(wrap_pyfunction!(dv_deserialize, m)?)?;
    m.add_function(wrap_pyfunction!(dv_cardinality, m)?)?;
    m.add_function(wrap_pyfunction!(dv_file, m)?)?;
    m.add_function(wrap_pyfunction!(z85_encode, m)?)?;
    m.add_function(wrap_pyfunction!(z85_decode, m)?)?;
    m.add_function(wrap_pyfunction!(create_checkpoint, m)?)?;
    m.add_function(wrap_pyfunction!(compact_logs, m)?)?;
    m.add_function(wrap_pyfunction!(cleanup_metadata, m)?)?;
    m.add_function(wrap_pyfunction!(feature_trace, m)?)?;
    m.add_function(wrap_pyfunction!(truncate_history, m)?)?;
    m.add_function(wrap_pyfunction!(files_with_narrower_types, m)?)?;
    m.add_function(wrap_pyfunction!(vacuum_plan, m)?)?;
    m.add_function(wrap_pyfunction!(delete_files, m)?)?;
    m.add_function(wrap_pyfunction!(validate_checksum, m)?)?;
    m.add_function(wrap_pyfunction!(catalog::child_directories, m)?)?;
    m.add_function(wrap_pyfunction!(catalog::delete_tree, m)?)?;
    m.add_function(wrap_pyfunction!(catalog::publish, m)?)?;
    m.add_function(wrap_pyfunction!(catalog::read_log_file, m)?)?;
    m.add_function(wrap_pyfunction!(catalog::log_file_version, m)?)?;
    m.add_function(wrap_pyfunction!(catalog::check_proposal, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
