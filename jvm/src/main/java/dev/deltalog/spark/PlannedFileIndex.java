package dev.deltalog.spark;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Predicate;
import org.apache.spark.sql.catalyst.expressions.BasePredicate;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.FileStatusWithMetadata;
import org.apache.spark.sql.execution.datasources.PartitionDirectory;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.Option;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractPartialFunction;

/**
 * Spark's view of exactly the files deltalog's core planned: no directory listing, no
 * partition discovery. Partition values are the typed values the core parsed from each file's
 * {@code partitionValues} ("Partition Value Serialization"), whatever the directories are
 * called; Spark's partition filters prune them here, before any task is made.
 */
public final class PlannedFileIndex implements FileIndex {
  private final Path root;
  private final StructType partitionSchema;
  private final List<PlannedFile> files;
  private final long sizeInBytes;

  PlannedFileIndex(Path root, StructType partitionSchema, List<PlannedFile> files) {
    this.root = root;
    this.partitionSchema = partitionSchema;
    this.files = files;
    long total = 0;
    for (PlannedFile f : files) {
      total += f.size;
    }
    this.sizeInBytes = total;
  }

  List<PlannedFile> files() {
    return files;
  }

  @Override
  public Seq<Path> rootPaths() {
    return CollectionConverters.asScala(List.of(root)).toList();
  }

  @Override
  public Seq<PartitionDirectory> listFiles(
      Seq<Expression> partitionFilters, Seq<Expression> dataFilters) {
    BasePredicate keep = partitionPredicate(partitionFilters);
    Map<InternalRow, List<FileStatusWithMetadata>> groups = new LinkedHashMap<>();
    Map<InternalRow, Boolean> kept = new LinkedHashMap<>();
    for (PlannedFile f : files) {
      Boolean take = kept.computeIfAbsent(f.partitionValues, v -> keep == null || keep.eval(v));
      if (!take) {
        continue;
      }
      // Modification time 0: the log's is not the store's, and Spark only shows it in
      // _metadata. No block locations: Spark then asks the store for none.
      FileStatus status = new FileStatus(f.size, false, 1, 128L << 20, 0L, f.path);
      groups
          .computeIfAbsent(f.partitionValues, v -> new ArrayList<>())
          .add(new FileStatusWithMetadata(status, scala.collection.immutable.Map$.MODULE$.empty()));
    }
    List<PartitionDirectory> out = new ArrayList<>(groups.size());
    for (Map.Entry<InternalRow, List<FileStatusWithMetadata>> e : groups.entrySet()) {
      out.add(new PartitionDirectory(e.getKey(), CollectionConverters.asScala(e.getValue()).toList()));
    }
    return CollectionConverters.asScala(out).toList();
  }

  /** The partition filters bound to the partition values' row, or null when there are none. */
  private BasePredicate partitionPredicate(Seq<Expression> filters) {
    List<Expression> list = CollectionConverters.asJava(filters);
    if (list.isEmpty() || partitionSchema.fields().length == 0) {
      return null;
    }
    Expression all = list.get(0);
    for (Expression e : list.subList(1, list.size())) {
      all = new org.apache.spark.sql.catalyst.expressions.And(all, e);
    }
    StructField[] fields = partitionSchema.fields();
    Expression bound =
        all.transform(
            new AbstractPartialFunction<Expression, Expression>() {
              @Override
              public boolean isDefinedAt(Expression e) {
                return e instanceof AttributeReference && index((AttributeReference) e) >= 0;
              }

              @Override
              public Expression apply(Expression e) {
                int i = index((AttributeReference) e);
                return new BoundReference(i, fields[i].dataType(), true);
              }

              private int index(AttributeReference a) {
                for (int i = 0; i < fields.length; i++) {
                  if (fields[i].name().equals(a.name())) {
                    return i;
                  }
                }
                for (int i = 0; i < fields.length; i++) {
                  if (fields[i].name().equalsIgnoreCase(a.name())) {
                    return i;
                  }
                }
                return -1;
              }
            });
    BasePredicate predicate = Predicate.createInterpreted(bound);
    predicate.initialize(0);
    return predicate;
  }

  @Override
  public String[] inputFiles() {
    String[] out = new String[files.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = files.get(i).path.toString();
    }
    return out;
  }

  @Override
  public void refresh() {
    // The plan is one snapshot's: a new version is a new plan, made by deltalog.
  }

  @Override
  public long sizeInBytes() {
    return sizeInBytes;
  }

  @Override
  public StructType partitionSchema() {
    return partitionSchema;
  }

  @Override
  public Option<Object> metadataOpsTimeNs() {
    return Option.empty();
  }

  @Override
  public String toString() {
    long withDv = files.stream().filter(f -> f.deletedRows != null).count();
    return "DeltalogPlan(" + root + ", " + files.size() + " files, " + withDv
        + " with deletion vectors)";
  }
}
