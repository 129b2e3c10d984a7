package dev.flinkadmission.testjobs;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;

/**
 * A bounded job: processes {@code --records} records (default 100) and ends FINISHED, so a test
 * sees what a cluster does when its application completes.
 */
public final class Finite {
    public static void main(String[] argv) throws Exception {
        Args args = new Args(argv);
        long records = args.getLong("records", 100);

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.fromSource(new DataGeneratorSource<>(n -> n, records, Types.LONG),
                        WatermarkStrategy.noWatermarks(), "sequence").uid("sequence-source")
                .map(n -> n * 2).returns(Types.LONG).uid("double").name("double")
                .sinkTo(new DiscardingSink<>()).uid("discard").name("discard");
        env.execute("Finite");
    }
}
