package dev.deltalog.spark;

import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.catalyst.InternalRow;

/**
 * One data file of deltalog's plan: where it is, how long, its typed partition values and
 * the serialized RoaringBitmap of its deleted rows (null when it has no deletion vector).
 *
 * <p>Everything here came from deltalog's Rust core ("Add File and Remove File", "Partition
 * Value Serialization", "Deletion Vector Format"); nothing is re-derived on the JVM.
 */
final class PlannedFile {
  final Path path;
  final long size;
  final InternalRow partitionValues;
  final byte[] deletedRows;

  PlannedFile(Path path, long size, InternalRow partitionValues, byte[] deletedRows) {
    this.path = path;
    this.size = size;
    this.partitionValues = partitionValues;
    this.deletedRows = deletedRows;
  }

  /** The key a task finds its file's bitmap by: the URI Spark gives {@code PartitionedFile}. */
  String key() {
    return path.toUri().toString();
  }
}
