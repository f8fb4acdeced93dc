package dev.deltalog.spark;

import java.io.Closeable;
import java.io.IOException;
import java.io.Serializable;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.roaringbitmap.PeekableIntIterator;
import org.roaringbitmap.RoaringBitmap;
import scala.Function1;
import scala.Option;
import scala.collection.Iterator;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction1;

/**
 * Spark's parquet format, knowing each file's deletion vector ("Deletion Vectors": a row
 * whose index is in its file's vector is not in the table).
 *
 * <p>The data schema carries a boolean column {@link #DELETED} the files do not hold. When a
 * query reads it (deltalog's DataFrame filters on it), this format asks Spark's vectorised
 * reader for each row's index in its file ({@code _tmp_metadata_row_index}, Spark's own row
 * index column) and fills {@link #DELETED} from the bitmap deltalog's core decoded on the
 * driver, broadcast once per scan. The vectorised reader stays columnar: the filter above the
 * scan drops the marked rows in Spark's generated code, with no join and no per-row Python.
 * On Spark's row path (nested types, too many columns) the marked rows are skipped here.
 */
public final class DeletionVectorParquetFormat extends ParquetFileFormat {
  /** The column marking deleted rows; deltalog's DataFrame filters on it and drops it. */
  public static final String DELETED = "__deltalog_deleted";

  private static final String ROW_INDEX = ParquetFileFormat.ROW_INDEX_TEMPORARY_COLUMN_NAME();

  /** Serialized bitmaps by file URI; only on the driver (tasks get them by broadcast). */
  private final transient Map<String, byte[]> bitmaps;

  DeletionVectorParquetFormat(List<PlannedFile> files) {
    this.bitmaps = new HashMap<>();
    for (PlannedFile f : files) {
      if (f.deletedRows != null) {
        bitmaps.put(f.key(), f.deletedRows);
      }
    }
  }

  @Override
  public String toString() {
    return "DeltalogParquet(" + bitmaps.size() + " deletion vectors)";
  }

  @Override
  public boolean equals(Object other) {
    return other == this;
  }

  @Override
  public int hashCode() {
    return System.identityHashCode(this);
  }

  @Override
  public Option<Seq<String>> vectorTypes(
      StructType requiredSchema, StructType partitionSchema, SQLConf sqlConf) {
    Option<Seq<String>> types = super.vectorTypes(requiredSchema, partitionSchema, sqlConf);
    int k = fieldIndex(requiredSchema, DELETED);
    if (k < 0 || types.isEmpty()) {
      return types;
    }
    // The marks live in an on-heap vector of this format's own, whatever the session's
    // off-heap setting makes of the others.
    List<String> list = new ArrayList<>(CollectionConverters.asJava(types.get()));
    list.set(k, OnHeapColumnVector.class.getName());
    return Option.apply(CollectionConverters.asScala(list).toList());
  }

  @Override
  public Function1<PartitionedFile, Iterator<InternalRow>> buildReaderWithPartitionValues(
      SparkSession sparkSession,
      StructType dataSchema,
      StructType partitionSchema,
      StructType requiredSchema,
      Seq<Filter> filters,
      scala.collection.immutable.Map<String, String> options,
      Configuration hadoopConf) {
    int marks = fieldIndex(requiredSchema, DELETED);
    if (marks < 0) {
      return super.buildReaderWithPartitionValues(
          sparkSession, dataSchema, partitionSchema, requiredSchema, filters, options,
          hadoopConf);
    }
    // Where each row's index comes from: Spark's row index column when the query already
    // reads it (_metadata.row_index), else the marks' own slot, which the reader fills with
    // row indexes and this format then overwrites with the marks.
    int rows = fieldIndex(requiredSchema, ROW_INDEX);
    StructType readSchema = requiredSchema;
    if (rows < 0) {
      StructField[] fields = requiredSchema.fields().clone();
      // Nullable: the vectorised reader refuses a required column the file lacks.
      fields[marks] = new StructField(ROW_INDEX, DataTypes.LongType, true, Metadata.empty());
      readSchema = new StructType(fields);
      rows = marks;
    }
    List<Filter> kept = new ArrayList<>();
    for (Filter f : CollectionConverters.asJava(filters)) {
      if (!List.of(f.references()).contains(DELETED)) {
        kept.add(f);
      }
    }
    Function1<PartitionedFile, Iterator<InternalRow>> inner =
        super.buildReaderWithPartitionValues(
            sparkSession, dataSchema, partitionSchema, readSchema,
            CollectionConverters.asScala(kept).toList(), options, hadoopConf);
    Broadcast<HashMap<String, byte[]>> shared =
        JavaSparkContext.fromSparkContext(sparkSession.sparkContext())
            .broadcast(new HashMap<>(bitmaps));
    StructType rowSchema = new StructType(concat(readSchema.fields(), partitionSchema.fields()));
    return new Reader(inner, shared, marks, rows, rowSchema);
  }

  private static StructField[] concat(StructField[] a, StructField[] b) {
    StructField[] out = new StructField[a.length + b.length];
    System.arraycopy(a, 0, out, 0, a.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  static int fieldIndex(StructType schema, String name) {
    StructField[] fields = schema.fields();
    for (int i = 0; i < fields.length; i++) {
      if (fields[i].name().equals(name)) {
        return i;
      }
    }
    return -1;
  }

  /** The function a task runs per file: Spark's reader, with the marks filled in. */
  private static final class Reader
      extends AbstractFunction1<PartitionedFile, Iterator<InternalRow>> implements Serializable {
    private static final long serialVersionUID = 1L;
    private final Function1<PartitionedFile, Iterator<InternalRow>> inner;
    private final Broadcast<HashMap<String, byte[]>> bitmaps;
    private final int marks;
    private final int rows;
    private final StructType rowSchema;

    Reader(
        Function1<PartitionedFile, Iterator<InternalRow>> inner,
        Broadcast<HashMap<String, byte[]>> bitmaps,
        int marks,
        int rows,
        StructType rowSchema) {
      this.inner = inner;
      this.bitmaps = bitmaps;
      this.marks = marks;
      this.rows = rows;
      this.rowSchema = rowSchema;
    }

    @Override
    public Iterator<InternalRow> apply(PartitionedFile file) {
      byte[] serialized = bitmaps.value().get(file.urlEncodedPath());
      RoaringBitmap deleted = new RoaringBitmap();
      if (serialized != null) {
        try {
          deleted.deserialize(ByteBuffer.wrap(serialized));
        } catch (IOException | RuntimeException e) {
          throw new IllegalStateException(
              "deltalog: the deletion vector of " + file.urlEncodedPath()
                  + " did not survive its way to the executor: " + e, e);
        }
      }
      // Spark's readers hand batches through an Iterator[InternalRow] (erased types); the
      // marked iterator does the same.
      @SuppressWarnings("unchecked")
      Iterator<InternalRow> out =
          (Iterator<InternalRow>) (Iterator<?>)
              new Marked(inner.apply(file), deleted, marks, rows, rowSchema);
      return out;
    }
  }

  /** The reader's batches with the marks column filled, or its rows without deleted ones. */
  private static final class Marked extends scala.collection.AbstractIterator<Object>
      implements Closeable {
    private final Iterator<InternalRow> inner;
    private final RoaringBitmap deleted;
    private final int marks;
    private final int rows;
    private final StructType rowSchema;
    private OnHeapColumnVector flags;
    private int capacity;
    private UnsafeProjection projection;
    private Object pending;

    Marked(
        Iterator<InternalRow> inner, RoaringBitmap deleted, int marks, int rows,
        StructType rowSchema) {
      this.inner = inner;
      this.deleted = deleted;
      this.marks = marks;
      this.rows = rows;
      this.rowSchema = rowSchema;
    }

    @Override
    public boolean hasNext() {
      if (pending != null) {
        return true;
      }
      while (inner.hasNext()) {
        Object next = inner.next();
        if (next instanceof ColumnarBatch) {
          pending = mark((ColumnarBatch) next);
          return true;
        }
        InternalRow row = (InternalRow) next;
        if (deleted.isEmpty() || !deleted.contains((int) row.getLong(rows))) {
          pending = project(row);
          return true;
        }
      }
      return false;
    }

    @Override
    public Object next() {
      if (!hasNext()) {
        throw new java.util.NoSuchElementException();
      }
      Object out = pending;
      pending = null;
      return out;
    }

    private ColumnarBatch mark(ColumnarBatch batch) {
      int n = batch.numRows();
      if (flags == null || capacity < n) {
        if (flags != null) {
          flags.close();
        }
        capacity = Math.max(n, 4096);
        flags = new OnHeapColumnVector(capacity, DataTypes.BooleanType);
      }
      flags.putBooleans(0, n, false);
      if (!deleted.isEmpty() && n > 0) {
        ColumnVector index = batch.column(rows);
        long first = index.getLong(0);
        long last = index.getLong(n - 1);
        if (last - first == n - 1 && contiguous(index, n, first)) {
          // The usual batch: consecutive rows of one row group. Only the deleted rows in
          // its range are visited (a DV deletes few rows; the rest stay false).
          PeekableIntIterator it = deleted.getIntIterator();
          it.advanceIfNeeded((int) first);
          while (it.hasNext()) {
            long row = Integer.toUnsignedLong(it.peekNext());
            if (row > last) {
              break;
            }
            flags.putBoolean((int) (row - first), true);
            it.next();
          }
        } else {
          // Rows skipped inside the batch (parquet page skipping by a pushed filter).
          for (int i = 0; i < n; i++) {
            if (deleted.contains((int) index.getLong(i))) {
              flags.putBoolean(i, true);
            }
          }
        }
      }
      ColumnVector[] columns = new ColumnVector[batch.numCols()];
      for (int c = 0; c < columns.length; c++) {
        columns[c] = c == marks ? flags : batch.column(c);
      }
      return new ColumnarBatch(columns, n);
    }

    /** Whether the batch's row indexes are first, first + 1, ... (checked, not assumed). */
    private static boolean contiguous(ColumnVector index, int n, long first) {
      for (int i = 1; i < n; i++) {
        if (index.getLong(i) != first + i) {
          return false;
        }
      }
      return true;
    }

    private InternalRow project(InternalRow row) {
      if (projection == null) {
        StructField[] fields = rowSchema.fields();
        List<Expression> exprs = new ArrayList<>(fields.length);
        for (int i = 0; i < fields.length; i++) {
          exprs.add(
              i == marks
                  ? new Literal(Boolean.FALSE, DataTypes.BooleanType)
                  : new BoundReference(i, fields[i].dataType(), fields[i].nullable()));
        }
        projection = UnsafeProjection.create(CollectionConverters.asScala(exprs).toList());
      }
      return projection.apply(row);
    }

    @Override
    public void close() throws IOException {
      if (flags != null) {
        flags.close();
        flags = null;
      }
      if (inner instanceof Closeable) {
        ((Closeable) inner).close();
      } else if (inner instanceof AutoCloseable) {
        try {
          ((AutoCloseable) inner).close();
        } catch (Exception e) {
          throw new IOException(e);
        }
      }
    }
  }
}
