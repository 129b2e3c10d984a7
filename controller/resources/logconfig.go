package resources

import (
	"maps"

	"github.com/hashicorp/go-version"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// Logging files the Flink image's scripts read from the configuration directory, which the
// ConfigMap hides: a file not in logConfig gets the operator's default, as Log4j's bare
// fallback logs errors only.
const (
	LogFileConsole        = "log4j-console.properties"
	LogFileCLI            = "log4j-cli.properties"
	LogFileLogbackConsole = "logback-console.xml"
)

// log4j2MinVersion is the first Flink version logging with Log4j 2 (FLINK-15672).
var log4j2MinVersion = version.Must(version.NewVersion("1.11"))

// defaultLog4j2 logs INFO and up to the console, keeping at INFO the libraries the operator
// quietens.
const defaultLog4j2 = `rootLogger.level = INFO
rootLogger.appenderRef.console.ref = ConsoleAppender
logger.pekko.name = org.apache.pekko
logger.pekko.level = INFO
logger.akka.name = akka
logger.akka.level = INFO
logger.kafka.name = org.apache.kafka
logger.kafka.level = INFO
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = INFO
logger.zookeeper.name = org.apache.zookeeper
logger.zookeeper.level = INFO
logger.netty.name = org.jboss.netty.channel.DefaultChannelPipeline
logger.netty.level = ERROR
appender.console.name = ConsoleAppender
appender.console.type = Console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yyyy-MM-dd HH:mm:ss,SSS} %-5p %-60c %x - %m%n
`

// defaultLog4j1 is the same in the Log4j 1 syntax of Flink before 1.11.
const defaultLog4j1 = `log4j.rootLogger=INFO, console
log4j.logger.akka=INFO
log4j.logger.org.apache.kafka=INFO
log4j.logger.org.apache.hadoop=INFO
log4j.logger.org.apache.zookeeper=INFO
log4j.logger.org.jboss.netty.channel.DefaultChannelPipeline=ERROR, console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{yyyy-MM-dd HH:mm:ss,SSS} %-5p %-60c %x - %m%n
`

// defaultLogback is the console configuration for images that log with Logback.
const defaultLogback = `<configuration>
  <appender name="console" class="ch.qos.logback.core.ConsoleAppender">
    <encoder>
      <pattern>%d{yyyy-MM-dd HH:mm:ss.SSS} [%thread] %-5level %logger{60} %X{sourceThread} - %msg%n</pattern>
    </encoder>
  </appender>
  <root level="INFO">
    <appender-ref ref="console"/>
  </root>
</configuration>
`

// LogFiles are the user's logConfig files, and a default for each console, CLI and Logback file it
// lacks.
func LogFiles(fc *v1beta1.FlinkCluster) map[string]string {
	files := maps.Clone(fc.Spec.LogConfig)
	if files == nil {
		files = map[string]string{}
	}
	log4j := defaultLog4j2
	if v, err := flinkcluster.ParseVersion(fc.Spec.FlinkVersion); err == nil && v.LessThan(log4j2MinVersion) {
		log4j = defaultLog4j1
	}
	for name, text := range map[string]string{LogFileConsole: log4j, LogFileCLI: log4j, LogFileLogbackConsole: defaultLogback} {
		if _, ok := files[name]; !ok {
			files[name] = text
		}
	}
	return files
}
