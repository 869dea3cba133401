// Starting points for the common flows; every value is a placeholder to adjust before deploying.
import type { Pipeline } from "./api";

export const TEMPLATES: { id: string; title: string; pipeline: Pipeline }[] = [
  {
    id: "mqtt-rocketmq",
    title: "MQTT → RocketMQ bridge with rules",
    pipeline: {
      name: "mqtt-to-rocketmq",
      mode: "direct",
      source: { "connector.class": "MQTTSource", "mqtt.server.uri": "tcp://127.0.0.1:1883", "mqtt.topics": "devices/+/telemetry", "mqtt.qos": "1" },
      transforms: [
        {
          alias: "bridge", type: "MqttRocketMQBridge", direction: "mqtt-to-rocketmq", rules: "r",
          "rule.r.mqtt.filter": "devices/+/telemetry", "rule.r.rocketmq.topic": "telemetry", "rule.r.rocketmq.tag": "${level:2}",
        },
      ],
      sinks: [{ "connector.class": "RocketMQSink", "rocketmq.namesrv": "127.0.0.1:9876" }],
    },
  },
  {
    id: "rocketmq-mqtt",
    title: "RocketMQ → MQTT",
    pipeline: {
      name: "rocketmq-to-mqtt",
      mode: "direct",
      source: { "connector.class": "RocketMQSource", "rocketmq.namesrv": "127.0.0.1:9876", "rocketmq.topics": "commands", "rocketmq.group": "ferry-commands" },
      transforms: [
        { alias: "bridge", type: "MqttRocketMQBridge", direction: "rocketmq-to-mqtt", rules: "r", "rule.r.rocketmq.topic": "commands", "rule.r.mqtt.topic": "devices/${tag}/commands" },
      ],
      sinks: [{ "connector.class": "MQTTSink", "mqtt.server.uri": "tcp://127.0.0.1:1883" }],
    },
  },
  {
    id: "kafka-kafka",
    title: "Kafka → Kafka replication",
    pipeline: {
      name: "kafka-replication",
      mode: "direct",
      source: { "connector.class": "KafkaReplicator", "source.bootstrap.servers": "127.0.0.1:9092", "target.bootstrap.servers": "127.0.0.1:9093", topics: "orders.*" },
      transforms: [],
      sinks: [{ "connector.class": "KafkaReplicatorSink" }],
    },
  },
  {
    id: "file-file",
    title: "File → backbone → file",
    pipeline: {
      name: "file-copy",
      mode: "backbone",
      source: { "connector.class": "FileStreamSource", file: "/path/to/input.txt" },
      transforms: [{ alias: "wrap", type: "org.apache.kafka.connect.transforms.HoistField$Value", field: "line" }],
      sinks: [{ "connector.class": "FileStreamSink", file: "/path/to/output.jsonl" }],
    },
  },
];
