package dev.deltalog.spark;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.connector.read.streaming.ReadMaxBytes;
import org.apache.spark.sql.connector.read.streaming.ReadMaxFiles;
import org.apache.spark.sql.connector.read.streaming.SupportsAdmissionControl;
import org.apache.spark.sql.connector.read.streaming.SupportsTriggerAvailableNow;
import org.apache.spark.sql.execution.streaming.Offset;
import org.apache.spark.sql.execution.streaming.Source;
import org.apache.spark.sql.types.StructType;
import scala.Option;

/**
 * A Delta table as a streaming source whose micro-batches are plans like any read's: the
 * offsets and each batch's files come from deltalog ({@link StreamPlanner}; the Rust core
 * plans, once, on the driver), and each batch is read by Spark's parquet scan through
 * {@link PlannedScan} (deletion vectors dropped by {@link DeletionVectorParquetFormat}), not
 * row by row through Python.
 */
public final class PlannedStream
    implements Source, SupportsAdmissionControl, SupportsTriggerAvailableNow {
  private final StreamPlanner planner;
  private final StructType schema;
  private final SparkSession session;

  PlannedStream(StreamPlanner planner, StructType schema, SparkSession session) {
    this.planner = planner;
    this.schema = schema;
    this.session = session;
  }

  @Override
  public StructType schema() {
    return schema;
  }

  @Override
  public Option<Offset> getOffset() {
    throw new UnsupportedOperationException("deltalog: latestOffset(start, limit) plans this source");
  }

  @Override
  public ReadLimit getDefaultReadLimit() {
    String limit = planner.defaultReadLimit();
    long amount = Long.parseLong(limit.substring(limit.indexOf(':') + 1));
    return limit.startsWith("bytes:") ? ReadLimit.maxBytes(amount) : ReadLimit.maxFiles((int) amount);
  }

  @Override
  public org.apache.spark.sql.connector.read.streaming.Offset latestOffset(
      org.apache.spark.sql.connector.read.streaming.Offset start, ReadLimit limit) {
    String kind = "all";
    long amount = 0;
    if (limit instanceof ReadMaxFiles) {
      kind = "files";
      amount = ((ReadMaxFiles) limit).maxFiles();
    } else if (limit instanceof ReadMaxBytes) {
      kind = "bytes";
      amount = ((ReadMaxBytes) limit).maxBytes();
    }
    String end = planner.latestOffset(start == null ? null : start.json(), kind, amount);
    return end == null ? null : new PlanOffset(end);
  }

  @Override
  public void prepareForTriggerAvailableNow() {
    planner.prepareForTriggerAvailableNow();
  }

  @Override
  public Dataset<Row> getBatch(Option<Offset> start, Offset end) {
    Dataset<Row> batch = planner.batch(start.isDefined() ? start.get().json() : null, end.json());
    // A streaming relation over the batch's rows (as Spark's own sources hand theirs over):
    // the planned scan runs as it would in a batch query.
    return session.internalCreateDataFrame(batch.queryExecution().toRdd(), batch.schema(), true);
  }

  @Override
  public void commit(Offset end) {
    planner.commit(end.json());
  }

  @Override
  public void stop() {
    planner.stop();
  }

  @Override
  public String toString() {
    return "DeltalogPlannedStream";
  }

  /** An offset as deltalog's JSON text (equal when the text is). */
  static final class PlanOffset extends Offset {
    private final String json;

    PlanOffset(String json) {
      this.json = json;
    }

    @Override
    public String json() {
      return json;
    }
  }
}
