package dev.deltalog.spark;

import java.net.URI;
import java.util.List;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.execution.datasources.FileFormat;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import scala.Option;

/**
 * The entry point deltalog's Python layer calls (through py4j): a DataFrame over exactly the
 * files of deltalog's plan, read by Spark's parquet source.
 *
 * <p>One {@link HadoopFsRelation} whatever the partitioning: the partition values are the
 * plan's, so a table whose directories do not spell its values ("Partition Value
 * Serialization" promises no layout) needs no union of scans. Files with deletion vectors are
 * read by {@link DeletionVectorParquetFormat}; a plan without any uses Spark's parquet format
 * as it is.
 */
public final class PlannedScan {
  private PlannedScan() {}

  /** The Spark version this jar was compiled against, for deltalog's compatibility check. */
  public static String compiledSparkVersion() {
    return org.apache.spark.package$.MODULE$.SPARK_VERSION();
  }

  /**
   * A DataFrame of the data columns {@code dataSchemaJson} (physical names, Spark's JSON
   * schema; with a boolean {@code __deltalog_deleted} column when any file has a deletion
   * vector) and the partition columns {@code partitionSchemaJson}, over the files of the
   * Arrow IPC stream {@code plan}; {@code hadoopOptions} are Hadoop settings for this scan
   * (a table's object store credentials), on top of the session's.
   */
  public static Dataset<Row> dataFrame(
      org.apache.spark.sql.classic.SparkSession session,
      String rootUri,
      byte[] plan,
      String dataSchemaJson,
      String partitionSchemaJson,
      java.util.Map<String, String> hadoopOptions) throws Exception {
    StructType dataSchema = (StructType) DataType.fromJson(dataSchemaJson);
    StructType partitionSchema = (StructType) DataType.fromJson(partitionSchemaJson);
    List<PlannedFile> files = PlanReader.read(plan, partitionSchema);
    PlannedFileIndex index =
        new PlannedFileIndex(new Path(PlanReader.hadoopUri(rootUri)), partitionSchema, files);
    boolean anyDeleted = files.stream().anyMatch(f -> f.deletedRows != null);
    boolean marks = DeletionVectorParquetFormat.fieldIndex(dataSchema, DeletionVectorParquetFormat.DELETED) >= 0;
    if (anyDeleted && !marks) {
      throw new IllegalArgumentException(
          "deltalog: files with deletion vectors need the "
              + DeletionVectorParquetFormat.DELETED + " column in the data schema");
    }
    FileFormat format = marks ? new DeletionVectorParquetFormat(files) : new ParquetFileFormat();
    HadoopFsRelation relation =
        new HadoopFsRelation(
            index,
            partitionSchema,
            dataSchema,
            Option.empty(),
            format,
            // The table's store settings (credentials, endpoint) for this scan only: Spark
            // merges a relation's options into the Hadoop configuration its readers get.
            scala.collection.immutable.Map$.MODULE$.from(
                scala.jdk.javaapi.CollectionConverters.asScala(hadoopOptions)),
            session);
    return session.baseRelationToDataFrame(relation);
  }

  /**
   * {@code files} (a {@link #dataFrame}) shaped as the read's result in one py4j call: the
   * rows marked deleted dropped when {@code dropDeleted}, projected by {@code outputs} (Spark
   * SQL expressions separated by NUL characters) and aliased {@code alias}.
   */
  public static Dataset<Row> shaped(
      Dataset<Row> files, boolean dropDeleted, String outputs, String alias) {
    Dataset<Row> kept =
        dropDeleted
            ? files.where(
                org.apache.spark.sql.functions.not(
                    org.apache.spark.sql.functions.col(DeletionVectorParquetFormat.DELETED)))
            : files;
    return kept.selectExpr(outputs.split("\u0000", -1)).alias(alias);
  }
}
