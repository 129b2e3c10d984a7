package dev.flinkadmission.testjobs;

import java.util.HashMap;
import java.util.Map;

/** Parses the jobs' program arguments: {@code --name value} pairs (no ParameterTool, whose package moved in Flink 2.x). */
final class Args {
    private final Map<String, String> values = new HashMap<>();

    Args(String[] args) {
        for (int i = 0; i < args.length; i++) {
            if (!args[i].startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument: " + args[i]);
            }
            String name = args[i].substring(2);
            String value = i + 1 < args.length && !args[i + 1].startsWith("--") ? args[++i] : "true";
            values.put(name, value);
        }
    }

    String get(String name, String fallback) {
        return values.getOrDefault(name, fallback);
    }

    long getLong(String name, long fallback) {
        String v = values.get(name);
        return v == null ? fallback : Long.parseLong(v);
    }
}
