package dev.deltalog.spark;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;

/**
 * What {@link PlannedStream} asks deltalog's Python layer (through py4j's callback server, in
 * the driver's Python process): the offsets of a Delta table's stream and each micro-batch as
 * a DataFrame of the files deltalog's Rust core planned. Offsets are JSON text that deltalog
 * alone reads; the JVM side keeps and compares them and never reads the log.
 */
public interface StreamPlanner {
  /** The read limit the stream's options set: {@code files:<n>} or {@code bytes:<n>}. */
  String defaultReadLimit();

  /**
   * The end offset of the next batch from {@code start} (null: the stream's start) within the
   * limit ({@code kind} {@code files}, {@code bytes} or {@code all}); null when there is nothing
   * to read from the stream's start yet.
   */
  String latestOffset(String start, String kind, long limit);

  /** Trigger.AvailableNow: the stream ends at the table's version of this moment. */
  void prepareForTriggerAvailableNow();

  /** The rows from {@code start} (exclusive; null: the stream's start) to {@code end}. */
  Dataset<Row> batch(String start, String end);

  /** Everything up to {@code end} is delivered. */
  void commit(String end);

  void stop();
}
