package dev.flinkadmission.testjobs;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;

/**
 * Appends one JSON line per call to a report file shared by all subtasks. Each line is a single
 * write(2) on a file opened with O_APPEND (and serialized within the JVM), so lines of concurrent
 * subtasks, in one TaskManager or several on the same machine, never interleave.
 */
final class Report {
    private static final Object LOCK = new Object();

    private Report() {}

    static void append(String path, String jsonLine) {
        if (path == null || path.isEmpty()) {
            return;
        }
        byte[] line = (jsonLine + "\n").getBytes(StandardCharsets.UTF_8);
        Path p = Paths.get(path);
        synchronized (LOCK) {
            try {
                if (p.getParent() != null) {
                    Files.createDirectories(p.getParent());
                }
                Files.write(p, line, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.APPEND);
            } catch (IOException e) {
                throw new UncheckedIOException("writing report " + path, e);
            }
        }
    }
}
