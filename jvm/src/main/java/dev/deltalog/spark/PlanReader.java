package dev.deltalog.spark;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * Reads the plan deltalog's core wrote ({@code RawScan.file_plan}, an Arrow IPC stream):
 * columns {@code path} (an absolute URI), {@code size}, {@code deleted_rows} (a portable
 * RoaringBitmap, null without a deletion vector) and {@code partition} (a struct of the typed
 * partition values, by logical name, in the partition schema's order).
 *
 * <p>Partition values are read through Spark's own {@link ArrowColumnVector}, so their
 * internal representation (days, microseconds, decimals, UTF-8) is Spark's, not ours.
 */
final class PlanReader {
  private PlanReader() {}

  static List<PlannedFile> read(byte[] ipc, StructType partitionSchema) {
    List<PlannedFile> files = new ArrayList<>();
    try (BufferAllocator allocator = new RootAllocator();
        ArrowStreamReader reader =
            new ArrowStreamReader(new ByteArrayInputStream(ipc), allocator)) {
      VectorSchemaRoot root = reader.getVectorSchemaRoot();
      while (reader.loadNextBatch()) {
        VarCharVector paths = (VarCharVector) root.getVector("path");
        BigIntVector sizes = (BigIntVector) root.getVector("size");
        VarBinaryVector deleted = (VarBinaryVector) root.getVector("deleted_rows");
        StructVector partition = (StructVector) root.getVector("partition");
        int rows = root.getRowCount();
        ColumnarBatch values = partitionBatch(partition, partitionSchema, rows);
        for (int i = 0; i < rows; i++) {
          String uri = new String(paths.get(i), java.nio.charset.StandardCharsets.UTF_8);
          InternalRow row =
              values == null ? InternalRow.empty() : values.getRow(i).copy();
          byte[] bitmap = deleted.isNull(i) ? null : deleted.get(i);
          files.add(new PlannedFile(new Path(hadoopUri(uri)), sizes.get(i), row, bitmap));
        }
      }
    } catch (IOException | URISyntaxException | ClassCastException | NullPointerException e) {
      throw new IllegalArgumentException(
          "deltalog: the file plan handed to the JVM is not the one deltalog's core writes: " + e,
          e);
    }
    return files;
  }

  /**
   * A URI of deltalog's (object_store's schemes) as Hadoop names the same file system:
   * {@code s3://} and {@code s3n://} are S3A's {@code s3a://}; others are the same.
   */
  static URI hadoopUri(String uri) throws URISyntaxException {
    URI parsed = new URI(uri);
    String scheme = parsed.getScheme();
    if ("s3".equals(scheme) || "s3n".equals(scheme)) {
      return new URI("s3a" + uri.substring(scheme.length()));
    }
    return parsed;
  }

  private static ColumnarBatch partitionBatch(
      StructVector partition, StructType partitionSchema, int rows) {
    if (partitionSchema.fields().length == 0) {
      return null;
    }
    List<FieldVector> children = partition.getChildrenFromFields();
    if (children.size() != partitionSchema.fields().length) {
      throw new IllegalArgumentException(
          "deltalog: the plan has "
              + children.size()
              + " partition columns, the partition schema "
              + partitionSchema.fields().length);
    }
    ColumnVector[] vectors = new ColumnVector[children.size()];
    for (int c = 0; c < vectors.length; c++) {
      vectors[c] = new ArrowColumnVector(children.get(c));
    }
    return new ColumnarBatch(vectors, rows);
  }
}
