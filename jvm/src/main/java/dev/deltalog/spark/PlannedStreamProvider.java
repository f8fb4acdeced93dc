package dev.deltalog.spark;

import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.sql.SQLContext;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.execution.streaming.Source;
import org.apache.spark.sql.sources.StreamSourceProvider;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import scala.Option;
import scala.Tuple2;
import scala.collection.immutable.Map;

/**
 * The format {@code spark.readStream} names to start a {@link PlannedStream}: deltalog's
 * Python layer registers the stream's planner and schema under an id first, and passes the id
 * as the {@code deltalog.stream} option (a stream restarted from its checkpoint registers a
 * planner anew; the offsets it resumes from are deltalog's JSON, kept by Spark).
 */
public final class PlannedStreamProvider implements StreamSourceProvider {
  /** The option naming the registered stream. */
  public static final String OPTION = "deltalog.stream";

  private static final ConcurrentHashMap<String, Tuple2<StreamPlanner, StructType>> STREAMS =
      new ConcurrentHashMap<>();

  /** Registers the planner and schema (Spark's JSON) of a stream about to start. */
  public static void register(String id, StreamPlanner planner, String schemaJson) {
    STREAMS.put(id, new Tuple2<>(planner, (StructType) DataType.fromJson(schemaJson)));
  }

  /** Forgets a stream (its query stopped). */
  public static void unregister(String id) {
    STREAMS.remove(id);
  }

  private static Tuple2<StreamPlanner, StructType> stream(Map<String, String> parameters) {
    Option<String> id = parameters.get(OPTION);
    Tuple2<StreamPlanner, StructType> found = id.isDefined() ? STREAMS.get(id.get()) : null;
    if (found == null) {
      throw new IllegalArgumentException(
          "deltalog: no planned stream is registered under this source's "
              + OPTION + " option (start the stream with deltalog.spark.read_stream)");
    }
    return found;
  }

  @Override
  public Tuple2<String, StructType> sourceSchema(
      SQLContext sqlContext,
      Option<StructType> schema,
      String providerName,
      Map<String, String> parameters) {
    return new Tuple2<>("deltalog", stream(parameters)._2());
  }

  @Override
  public Source createSource(
      SQLContext sqlContext,
      String metadataPath,
      Option<StructType> schema,
      String providerName,
      Map<String, String> parameters) {
    Tuple2<StreamPlanner, StructType> found = stream(parameters);
    return new PlannedStream(found._1(), found._2(), (SparkSession) sqlContext.sparkSession());
  }
}
