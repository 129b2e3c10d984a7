package dev.flinkadmission.testjobs;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;

/**
 * An unbounded stateful job whose report file proves which state each start restored.
 *
 * <p>A checkpointed sequence source (~20 records/s in total; it resumes where its checkpoint
 * was) is keyed by {@code "k" + n % 4} into a counter whose count lives in operator state. On every
 * start each counter subtask appends {@code {"event":"start","subtask":i,"restoredCheckpointId":
 * <id or -1>,"restoredCount":<c>,"attempt":<a>}}, and on every checkpoint or savepoint {@code
 * {"event":"snapshot","subtask":i,"checkpointId":<id>,"count":<c>}}: after a restore from
 * checkpoint X, restoredCount equals the count that subtask snapshotted at X (same parallelism;
 * at another parallelism the sums over subtasks are equal). A restore from older or empty state
 * shows as a drop.
 *
 * <p>Arguments: {@code --report <path>} (one file shared by all subtasks), {@code --fail-file
 * <path>}: while that file says {@code FAIL} the counter throws on each record; {@code RUN} or
 * no file: normal. {@code --rate <records/s>} (default 20). The checkpoint interval comes from
 * the cluster's configuration.
 */
public final class Counting {
    public static void main(String[] argv) throws Exception {
        Args args = new Args(argv);
        String report = args.get("report", "");
        String failFile = args.get("fail-file", "");
        double rate = Double.parseDouble(args.get("rate", "20"));

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        DataGeneratorSource<Long> source = new DataGeneratorSource<>(
                n -> n, Long.MAX_VALUE, RateLimiterStrategy.perSecond(rate), Types.LONG);
        env.fromSource(source, WatermarkStrategy.noWatermarks(), "sequence").uid("sequence-source")
                // "k0".."k3": at parallelism 2 these land on both subtasks (two each), at 3 on all
                // three; plain n % 4 would put all four keys on subtask 1 of 2.
                .keyBy(n -> "k" + (n % 4))
                .map(new Counter(report, failFile)).uid("counter").name("counter")
                .sinkTo(new DiscardingSink<>()).uid("discard").name("discard");
        env.execute("Counting");
    }

    /** Counts the records its subtask has seen, across restores. */
    static final class Counter extends RichMapFunction<Long, Long> implements CheckpointedFunction {
        private final String report;
        private final String failFile;
        private transient ListState<Long> state;
        private transient long count;

        Counter(String report, String failFile) {
            this.report = report;
            this.failFile = failFile;
        }

        @Override
        public Long map(Long n) throws Exception {
            if (!failFile.isEmpty()) {
                Path p = Paths.get(failFile);
                if (Files.exists(p) && new String(Files.readAllBytes(p), StandardCharsets.UTF_8).trim().equals("FAIL")) {
                    throw new RuntimeException("ControlledFailureException: fail-file says FAIL");
                }
            }
            return ++count;
        }

        @Override
        public void initializeState(FunctionInitializationContext ctx) throws Exception {
            state = ctx.getOperatorStateStore().getListState(new ListStateDescriptor<>("count", Types.LONG));
            count = 0;
            for (Long c : state.get()) {
                count += c;
            }
            Report.append(report, String.format(
                    "{\"event\":\"start\",\"subtask\":%d,\"restoredCheckpointId\":%d,\"restoredCount\":%d,\"attempt\":%d}",
                    subtask(), ctx.getRestoredCheckpointId().orElse(-1L), count,
                    getRuntimeContext().getTaskInfo().getAttemptNumber()));
        }

        @Override
        public void snapshotState(FunctionSnapshotContext ctx) throws Exception {
            state.update(java.util.List.of(count));
            Report.append(report, String.format(
                    "{\"event\":\"snapshot\",\"subtask\":%d,\"checkpointId\":%d,\"count\":%d}",
                    subtask(), ctx.getCheckpointId(), count));
        }

        private int subtask() {
            return getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
        }
    }
}
