package dev.deltalog.spark;

import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumFileSystem;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.JobContext;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.spark.internal.io.FileCommitProtocol;
import org.apache.spark.internal.io.FileNameSpec;
import org.apache.spark.sql.execution.datasources.SQLHadoopMapReduceCommitProtocol;
import scala.Option;
import scala.collection.immutable.Seq;

/**
 * Spark's commit protocol for a write whose files deltalog commits: each task writes its files
 * straight to their final place under the table root (no task or job directory, so no rename:
 * on an object store a rename is a copy of every byte), and the job hands the list of files it
 * wrote to deltalog, whose commit adds them (spec "Add File and Remove File": a file is in the
 * table once a commit adds it; until then readers never see it). This is the shape of Delta
 * Spark's own delayed commit.
 *
 * <p>deltalog sets this class as {@code spark.sql.sources.commitProtocolClass} for the length
 * of one write, whose output path ends in a segment beginning {@link #MARK} (a name only: the
 * files go to its parent, the table root). Any other write that runs meanwhile is passed to
 * Spark's default protocol unchanged.
 *
 * <p>A task's file names carry a random id, so a retried or speculative attempt never writes
 * over another's file; an aborted task deletes its files, an aborted job the files of the tasks
 * it had committed. A file an executor left when it died is in no commit: VACUUM removes it.
 */
public final class DirectCommitProtocol extends FileCommitProtocol implements Serializable {
  private static final long serialVersionUID = 1L;

  /** The last segment of a deltalog write's output path begins with this. */
  public static final String MARK = "_deltalog_write-";

  /** The files each finished job wrote (relative to the table root), by its write's mark. */
  private static final ConcurrentHashMap<String, List<String>> WRITTEN =
      new ConcurrentHashMap<>();

  private final String jobId;
  private final String root;
  private final String mark;
  private final FileCommitProtocol delegate;

  /** The files of the task attempt running in this (executor-side) copy. */
  private transient List<String> taskFiles;

  /** The files of the tasks committed so far (driver side), deleted if the job aborts. */
  private final transient List<String> committed = Collections.synchronizedList(new ArrayList<>());

  public DirectCommitProtocol(String jobId, String outputPath, boolean dynamicPartitionOverwrite) {
    this.jobId = jobId;
    Path output = new Path(outputPath);
    if (output.getName().startsWith(MARK) && !dynamicPartitionOverwrite) {
      this.root = output.getParent().toString();
      this.mark = output.getName();
      this.delegate = null;
    } else {
      this.root = null;
      this.mark = null;
      this.delegate =
          new SQLHadoopMapReduceCommitProtocol(jobId, outputPath, dynamicPartitionOverwrite);
    }
  }

  public DirectCommitProtocol(String jobId, String outputPath) {
    this(jobId, outputPath, false);
  }

  /**
   * The files (paths relative to the table root, as the file system names them) the finished
   * job of the write marked {@code mark} wrote, or null when no such job finished; forgotten
   * once taken.
   */
  public static List<String> takeWritten(String mark) {
    return WRITTEN.remove(mark);
  }

  @Override
  public void setupJob(JobContext jobContext) {
    if (delegate != null) {
      delegate.setupJob(jobContext);
    }
  }

  @Override
  public void commitJob(JobContext jobContext, Seq<TaskCommitMessage> taskCommits) {
    if (delegate != null) {
      delegate.commitJob(jobContext, taskCommits);
      return;
    }
    List<String> files = new ArrayList<>();
    for (TaskCommitMessage message : scala.jdk.javaapi.CollectionConverters.asJava(taskCommits)) {
      files.addAll(filesOf(message));
    }
    WRITTEN.put(mark, files);
  }

  @Override
  public void abortJob(JobContext jobContext) {
    if (delegate != null) {
      delegate.abortJob(jobContext);
      return;
    }
    WRITTEN.remove(mark);
    List<String> written;
    synchronized (committed) {
      written = new ArrayList<>(committed);
    }
    delete(jobContext.getConfiguration(), written);
  }

  @Override
  public void setupTask(TaskAttemptContext taskContext) {
    if (delegate != null) {
      delegate.setupTask(taskContext);
      return;
    }
    taskFiles = new ArrayList<>();
  }

  @Override
  @SuppressWarnings("deprecation")
  public String newTaskTempFile(TaskAttemptContext taskContext, Option<String> dir, String ext) {
    return newTaskTempFile(taskContext, dir, new FileNameSpec("", ext));
  }

  @Override
  public String newTaskTempFile(
      TaskAttemptContext taskContext, Option<String> dir, FileNameSpec spec) {
    if (delegate != null) {
      return delegate.newTaskTempFile(taskContext, dir, spec);
    }
    int split = taskContext.getTaskAttemptID().getTaskID().getId();
    String name =
        String.format("%spart-%05d-%s%s", spec.prefix(), split, UUID.randomUUID(), spec.suffix());
    String relative = dir.isDefined() ? dir.get() + "/" + name : name;
    taskFiles.add(relative);
    return new Path(root + "/" + relative).toString();
  }

  @Override
  @SuppressWarnings("deprecation")
  public String newTaskTempFileAbsPath(
      TaskAttemptContext taskContext, String absoluteDir, String ext) {
    return newTaskTempFileAbsPath(taskContext, absoluteDir, new FileNameSpec("", ext));
  }

  @Override
  public String newTaskTempFileAbsPath(
      TaskAttemptContext taskContext, String absoluteDir, FileNameSpec spec) {
    if (delegate != null) {
      return delegate.newTaskTempFileAbsPath(taskContext, absoluteDir, spec);
    }
    throw new UnsupportedOperationException(
        "deltalog: a Delta table's files live under its root, not at custom partition locations");
  }

  @Override
  public TaskCommitMessage commitTask(TaskAttemptContext taskContext) {
    if (delegate != null) {
      return delegate.commitTask(taskContext);
    }
    dropChecksums(taskContext.getConfiguration());
    return new TaskCommitMessage(new ArrayList<>(taskFiles));
  }

  /**
   * Hadoop's local file system writes a hidden {@code .<name>.crc} beside each file it
   * writes; a Delta table has no use for them (Spark's own protocol leaves them in its task
   * directory), so they go.
   */
  private void dropChecksums(Configuration conf) {
    for (String relative : taskFiles) {
      try {
        Path path = new Path(root + "/" + relative);
        FileSystem fs = path.getFileSystem(conf);
        if (fs instanceof ChecksumFileSystem) {
          ChecksumFileSystem checked = (ChecksumFileSystem) fs;
          checked.getRawFileSystem().delete(checked.getChecksumFile(path), false);
        }
      } catch (IOException | RuntimeException e) {
        // (a checksum left behind is harmless)
      }
    }
  }

  @Override
  public void abortTask(TaskAttemptContext taskContext) {
    if (delegate != null) {
      delegate.abortTask(taskContext);
      return;
    }
    if (taskFiles != null) {
      delete(taskContext.getConfiguration(), taskFiles);
      taskFiles.clear();
    }
  }

  @Override
  public boolean deleteWithJob(FileSystem fs, Path path, boolean recursive) {
    if (delegate != null) {
      return delegate.deleteWithJob(fs, path, recursive);
    }
    return super.deleteWithJob(fs, path, recursive);
  }

  @Override
  public void onTaskCommit(TaskCommitMessage taskCommit) {
    if (delegate != null) {
      delegate.onTaskCommit(taskCommit);
      return;
    }
    committed.addAll(filesOf(taskCommit));
  }

  @SuppressWarnings("unchecked")
  private static List<String> filesOf(TaskCommitMessage message) {
    Object files = message.obj();
    return files == null ? Collections.emptyList() : (List<String>) files;
  }

  /** Deletes {@code files} (relative to the root), each tried once: what is left, VACUUM takes. */
  private void delete(Configuration conf, List<String> files) {
    for (String relative : files) {
      try {
        Path path = new Path(root + "/" + relative);
        path.getFileSystem(conf).delete(path, false);
      } catch (IOException | RuntimeException e) {
        // (best effort: the file is in no commit)
      }
    }
  }
}
