#!/usr/bin/env bash
# Fetches what real Apache Flink JobManagers and TaskManagers need from Maven Central (flink-dist
# is not published there) and builds the project's test jobs, caching both outside the
# repository so tests can start Flink JVMs with `java -cp "<lib>/*" ...`.
#
#   flink-artifacts.sh <flink-version>  every jar of a JobManager in application mode
#                                       (flink-container's StandaloneApplicationClusterEntryPoint)
#                                       and a TaskManager (TaskManagerRunner), with Kubernetes HA
#                                       (flink-kubernetes), the Pekko RPC system, the DataStream API
#                                       and the datagen connector the test jobs use, and log4j2;
#                                       prints the lib directory. A default
#                                       log4j-console.properties sits in ../conf beside it.
#   flink-artifacts.sh --jobs           builds internal/test/realflink/jobs (from a copy, so no
#                                       target/ is left in the repository), cached by a hash of its
#                                       pom.xml and src/; prints the jar's path.
#
# Maven uses its default local repository (~/.m2) unless MAVEN_ARGS or MVN say otherwise.
# Progress goes to stderr so callers can capture stdout.
set -euo pipefail

CACHE_ROOT="${FLINK_ADMISSION_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/flink-admission}"
# BUILD_REV changes when the set of jars or the layout changes, so stale caches are not reused.
BUILD_REV=1
MVN="${MVN:-mvn}"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JOBS_SRC="$REPO_ROOT/internal/test/realflink/jobs"
JOBS_JAR=flink-admission-test-jobs.jar

# Maven plugins, pinned so builds are reproducible (all run on Maven 3.8.7).
DEPENDENCY_PLUGIN_VERSION=3.8.1

log() { printf '[flink-artifacts] %s\n' "$*" >&2; }
usage() { printf 'usage: %s <flink-version> | --jobs\n' "$0" >&2; exit 2; }

[[ $# -eq 1 ]] || usage
mode="$1"

# logged runs mvn with its output kept in a log and turned into a progress line every 25
# downloads; the log's tail is printed when the command fails.
logged() {
  local what="$1"; shift
  if ! "$@" > >(tee "$work/$what.log" | awk '/Downloaded from/ { n++; if (n % 25 == 0) { printf "[flink-artifacts] %d artifacts downloaded...\n", n; fflush() } }' >&2) 2>&1; then
    sleep 0.2
    log "$what failed:"; tail -n 40 "$work/$what.log" >&2
    return 1
  fi
}

# locked runs a build under a lock file: tests in several packages may ask at once, so one builds
# and the others wait for it.
locked() {
  local lock="$1"; shift
  mkdir -p "$(dirname "$lock")"
  exec 9>"$lock"
  if ! flock -n 9; then
    log "another build is running ($lock); waiting for it"
    flock 9
  fi
  "$@"
  exec 9>&-
}

work=""
cleanup() { if [[ -n "$work" ]]; then rm -rf "$work"; fi; }
trap cleanup EXIT

# ---------------------------------------------------------------------------------------------
# Flink's jars.
# ---------------------------------------------------------------------------------------------

# kubernetes_version: flink-kubernetes is not published for every Flink release (2.2.1 is
# missing on Central; 2.2.0 is there and, like 2.2.1, builds against flink-runtime 2.2.x with
# flink-runtime/flink-clients `provided`). FLINK_KUBERNETES_VERSION overrides.
kubernetes_version() {
  if [[ -n "${FLINK_KUBERNETES_VERSION:-}" ]]; then echo "$FLINK_KUBERNETES_VERSION"; return; fi
  case "$1" in
    2.2.1) echo 2.2.0 ;;
    *) echo "$1" ;;
  esac
}

write_lib_pom() {
  local v="$1" kv="$2"
  cat > "$work/pom.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0"
         xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 http://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.flinkadmission.local</groupId>
  <artifactId>flink-lib-${v}</artifactId>
  <version>1</version>
  <packaging>pom</packaging>

  <dependencyManagement>
    <dependencies>
      <!-- Flink's own versions of log4j and the rest (log4j-slf4j-impl matches its slf4j 1.7). -->
      <dependency>
        <groupId>org.apache.flink</groupId>
        <artifactId>flink-parent</artifactId>
        <version>${v}</version>
        <type>pom</type>
        <scope>import</scope>
      </dependency>
    </dependencies>
  </dependencyManagement>

  <dependencies>
    <!-- JobManager, application mode; flink-container has flink-runtime and flink-clients provided. -->
    <dependency><groupId>org.apache.flink</groupId><artifactId>flink-container</artifactId><version>${v}</version></dependency>
    <dependency><groupId>org.apache.flink</groupId><artifactId>flink-runtime</artifactId><version>${v}</version></dependency>
    <dependency><groupId>org.apache.flink</groupId><artifactId>flink-clients</artifactId><version>${v}</version></dependency>
    <dependency><groupId>org.apache.flink</groupId><artifactId>flink-rpc-akka-loader</artifactId><version>${v}</version></dependency>
    <!-- Kubernetes HA (fabric8 is shaded inside). -->
    <dependency><groupId>org.apache.flink</groupId><artifactId>flink-kubernetes</artifactId><version>${kv}</version></dependency>
    <!-- What the test jobs use. -->
    <dependency><groupId>org.apache.flink</groupId><artifactId>flink-streaming-java</artifactId><version>${v}</version></dependency>
    <dependency><groupId>org.apache.flink</groupId><artifactId>flink-connector-datagen</artifactId><version>${v}</version></dependency>
    <!-- Logging, as flink-dist's lib/ ships it. -->
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-api</artifactId></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-1.2-api</artifactId></dependency>
  </dependencies>

  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-dependency-plugin</artifactId>
        <version>${DEPENDENCY_PLUGIN_VERSION}</version>
      </plugin>
    </plugins>
  </build>
</project>
EOF
}

write_log4j_conf() {
  cat > "$1" <<'EOF'
# Console logging for Flink JVMs started by the tests: -Dlog4j.configurationFile=<this file>.
monitorInterval = 0
rootLogger.level = INFO
rootLogger.appenderRef.console.ref = ConsoleAppender

# Quieter third parties, as Flink's own log4j-console.properties does.
logger.pekko.name = org.apache.pekko
logger.pekko.level = INFO
logger.kafka.name = org.apache.kafka
logger.kafka.level = INFO
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = WARN
logger.zookeeper.name = org.apache.zookeeper
logger.zookeeper.level = INFO
logger.shaded_zookeeper.name = org.apache.flink.shaded.zookeeper3
logger.shaded_zookeeper.level = INFO
logger.netty.name = org.jboss.netty.channel.DefaultChannelPipeline
logger.netty.level = OFF

appender.console.name = ConsoleAppender
appender.console.type = CONSOLE
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yyyy-MM-dd HH:mm:ss,SSS} %-5p %-60c %x - %m%n
EOF
}

build_lib() {
  local v="$1" dest="$2"
  [[ -f "$dest/.complete" ]] && return 0
  local kv; kv="$(kubernetes_version "$v")"
  work="$(mktemp -d "$CACHE_ROOT/flink/.build-XXXXXX")"
  log "resolving Flink $v jars from Maven Central (flink-kubernetes $kv); cached in $dest"
  write_lib_pom "$v" "$kv"
  mkdir -p "$work/out/lib" "$work/out/conf"
  logged "flink-$v" "$MVN" -B -Dstyle.color=never ${MAVEN_ARGS:-} -f "$work/pom.xml" \
    "org.apache.maven.plugins:maven-dependency-plugin:${DEPENDENCY_PLUGIN_VERSION}:copy-dependencies" \
    -DincludeScope=runtime -DoutputDirectory="$work/out/lib"
  write_log4j_conf "$work/out/conf/log4j-console.properties"
  ( cd "$work/out/lib" && ls -1 *.jar ) > "$work/out/jars.txt"
  printf 'flink=%s\nflink-kubernetes=%s\nrev=%s\n' "$v" "$kv" "$BUILD_REV" > "$work/out/.complete"
  rm -rf "$dest"
  mv "$work/out" "$dest"
  log "$(wc -l < "$dest/jars.txt") jars in $dest/lib"
}

# ---------------------------------------------------------------------------------------------
# The test jobs.
# ---------------------------------------------------------------------------------------------

jobs_hash() {
  ( cd "$JOBS_SRC" && find pom.xml src -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum ) \
    | sha256sum | cut -c1-12
}

build_jobs() {
  local dest="$1"
  [[ -f "$dest/$JOBS_JAR" ]] && return 0
  work="$(mktemp -d "$CACHE_ROOT/flink/.build-XXXXXX")"
  log "building the test jobs from $JOBS_SRC (a copy; cached in $dest)"
  mkdir -p "$work/src"
  cp -R "$JOBS_SRC/pom.xml" "$JOBS_SRC/src" "$work/src/"
  logged jobs "$MVN" -B -Dstyle.color=never ${MAVEN_ARGS:-} -f "$work/src/pom.xml" package -DskipTests
  mkdir -p "$work/out"
  cp "$work/src/target/$JOBS_JAR" "$work/out/$JOBS_JAR"
  rm -rf "$dest"
  mv "$work/out" "$dest"
}

mkdir -p "$CACHE_ROOT/flink"
case "$mode" in
  --jobs)
    [[ -f "$JOBS_SRC/pom.xml" ]] || { log "no Maven project at $JOBS_SRC"; exit 1; }
    dest="$CACHE_ROOT/flink/jobs-$(jobs_hash)"
    if [[ ! -f "$dest/$JOBS_JAR" ]]; then locked "$CACHE_ROOT/flink/.jobs.lock" build_jobs "$dest"; fi
    echo "$dest/$JOBS_JAR"
    ;;
  -*) usage ;;
  *)
    [[ "$mode" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || usage
    dest="$CACHE_ROOT/flink/flink-${mode}-r${BUILD_REV}"
    if [[ ! -f "$dest/.complete" ]]; then locked "$CACHE_ROOT/flink/.flink-${mode}.lock" build_lib "$mode" "$dest"; fi
    echo "$dest/lib"
    ;;
esac
