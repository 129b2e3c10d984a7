package dev.flinkadmission.testjobs;

/**
 * An application whose main() fails before it builds any job graph, so a test sees how a
 * cluster in application mode reports an application that never submitted a job.
 */
public final class ThrowingMain {
    public static void main(String[] argv) {
        throw new IllegalArgumentException("ThrowingMain: main() throws before submitting a job");
    }
}
