// ferry interop CLI on the official Apache RocketMQ Java remoting client (rocketmq-client 5.3.3 by
// default; the same sources build against 4.9.7 and 5.5.0 — pom property rocketmq.version — and use
// only APIs all of them have, apart from one reflective look-up in persistSync).
//
//   produce --namesrv A --topic T --count N --seed S [--batch K]
//       N sync sends (DefaultMQProducer) of deterministic messages (Payload): body
//       Payload.body(seed, seq), tag T<seq%3>, key k<seq>, user property seq=<seq>, to the queue
//       with id seq % queues through a MessageQueueSelector. With --batch K > 1: send(Collection,
//       MessageQueue), up to K messages of one queue per batch (queues in turn, seqs ascending
//       within a queue), as ferry's tool does. One JSON line per message:
//       {"seq":..,"broker":..,"queue":..,"offset":..,"msg_id":..}.
//   consume --namesrv A --topic T --group G --count N --timeout-ms M [--linger-ms L]
//       DefaultLitePullConsumer from the first offset; polls until N messages arrived (then L ms
//       more, to catch duplicates) or M ms passed, commits the offsets, prints one JSON line per
//       message: {"queue","offset","tags","keys","props","body_hex","msg_id"}.
//       The client persists commits to the broker with one-way requests (on shutdown or every
//       5 s), which a test cannot wait for; so the tool also writes each queue's offset with a
//       synchronous UPDATE_CONSUMER_OFFSET and reports it on stderr before it exits.
//       Exit 0 when at least N messages arrived, 1 on timeout.
//
// Only JSON lines go to stdout; diagnostics go to stderr, the client's own log to its log root
// (-Drocketmq.client.logRoot). Single-threaded apart from the client's internal threads.
package ferry.interop;

import java.nio.charset.StandardCharsets;
import java.io.BufferedWriter;
import java.io.OutputStreamWriter;
import java.io.IOException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.impl.MQClientManager;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

public final class Main {
  private Main() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 1) {
      usage();
    }
    Map<String, String> opts = parse(args);
    int rc;
    switch (args[0]) {
      case "produce":
        rc = produce(opts);
        break;
      case "consume":
        rc = consume(opts);
        break;
      default:
        usage();
        rc = 2;
    }
    System.out.flush();
    // The client keeps non-daemon threads around after shutdown in some versions.
    System.exit(rc);
  }

  private static void usage() {
    System.err.println("usage: produce --namesrv A --topic T --count N --seed S\n"
        + "       consume --namesrv A --topic T --group G --count N --timeout-ms M"
        + " [--linger-ms L]");
    System.exit(2);
  }

  private static Map<String, String> parse(String[] args) {
    Map<String, String> m = new HashMap<>();
    for (int i = 1; i < args.length; i++) {
      if (!args[i].startsWith("--") || i + 1 >= args.length) {
        System.err.println("bad argument: " + args[i]);
        usage();
      }
      m.put(args[i].substring(2), args[++i]);
    }
    return m;
  }

  private static String need(Map<String, String> opts, String name) {
    String v = opts.get(name);
    if (v == null) {
      System.err.println("missing --" + name);
      usage();
    }
    return v;
  }

  private static int produce(Map<String, String> opts) throws Exception {
    String topic = need(opts, "topic");
    int count = Integer.parseInt(need(opts, "count"));
    long seed = Long.parseLong(need(opts, "seed"));
    int batch = Integer.parseInt(opts.getOrDefault("batch", "1"));
    DefaultMQProducer producer = new DefaultMQProducer("ferry_interop_java_producer");
    producer.setNamesrvAddr(need(opts, "namesrv"));
    producer.setInstanceName("ferry-interop-" + ProcessHandle.current().pid());
    producer.setRetryTimesWhenSendFailed(2);
    producer.setSendMsgTimeout(10000);
    producer.start();
    BufferedWriter out = stdout();
    try {
      List<MessageQueue> queues = producer.fetchPublishMessageQueues(topic);
      int queueCount = queues.size();
      if (queueCount == 0) {
        System.err.println("topic " + topic + " has no writable queues");
        return 1;
      }
      // Pick by queue id, not list position, so the mapping is seq % queues on a single broker.
      MessageQueueSelector byId = (mqs, msg, arg) -> {
        int want = (Integer) arg % mqs.size();
        for (MessageQueue q : mqs) {
          if (q.getQueueId() == want) {
            return q;
          }
        }
        return mqs.get(want);
      };
      if (batch > 1) {
        return produceBatches(producer, out, topic, queues, count, seed, batch);
      }
      for (int seq = 0; seq < count; seq++) {
        Message msg = message(topic, seed, seq);
        SendResult r = producer.send(msg, byId, seq);
        if (r.getSendStatus() != SendStatus.SEND_OK) {
          System.err.println("seq " + seq + ": " + r.getSendStatus());
          return 1;
        }
        out.write("{\"seq\":" + seq + ",\"broker\":" + Json.str(r.getMessageQueue().getBrokerName())
            + ",\"queue\":" + r.getMessageQueue().getQueueId() + ",\"offset\":"
            + r.getQueueOffset() + ",\"msg_id\":" + Json.str(r.getMsgId()) + "}\n");
      }
    } finally {
      out.flush();
      producer.shutdown();
    }
    return 0;
  }

  private static Message message(String topic, long seed, int seq) {
    Message msg = new Message(topic, Payload.tag(seq), Payload.key(seq), Payload.body(seed, seq));
    msg.putUserProperty("seq", Integer.toString(seq));
    return msg;
  }

  private static int produceBatches(DefaultMQProducer producer, BufferedWriter out, String topic,
      List<MessageQueue> queues, int count, long seed, int batch) throws Exception {
    int queueCount = queues.size();
    int round = batch * queueCount;
    for (int base = 0; base < count; base += round) {
      for (int qid = 0; qid < queueCount; qid++) {
        MessageQueue mq = null;
        for (MessageQueue q : queues) {
          if (q.getQueueId() == qid) {
            mq = q;
          }
        }
        List<Message> msgs = new ArrayList<>();
        List<Integer> seqs = new ArrayList<>();
        for (int seq = base + qid; seq < Math.min(count, base + round); seq += queueCount) {
          msgs.add(message(topic, seed, seq));
          seqs.add(seq);
        }
        if (msgs.isEmpty()) {
          continue;
        }
        SendResult r = producer.send(msgs, mq);
        if (r.getSendStatus() != SendStatus.SEND_OK) {
          System.err.println("batch from seq " + seqs.get(0) + ": " + r.getSendStatus());
          return 1;
        }
        String[] ids = r.getMsgId().split(",");
        for (int i = 0; i < seqs.size(); i++) {
          out.write("{\"seq\":" + seqs.get(i) + ",\"broker\":"
              + Json.str(r.getMessageQueue().getBrokerName()) + ",\"queue\":"
              + r.getMessageQueue().getQueueId() + ",\"offset\":" + (r.getQueueOffset() + i)
              + ",\"msg_id\":" + Json.str(i < ids.length ? ids[i] : "") + "}\n");
        }
      }
    }
    return 0;
  }

  private static int consume(Map<String, String> opts) throws Exception {
    String topic = need(opts, "topic");
    int count = Integer.parseInt(need(opts, "count"));
    long timeoutMs = Long.parseLong(need(opts, "timeout-ms"));
    long lingerMs = Long.parseLong(opts.getOrDefault("linger-ms", "2000"));
    DefaultLitePullConsumer consumer = new DefaultLitePullConsumer(need(opts, "group"));
    consumer.setNamesrvAddr(need(opts, "namesrv"));
    consumer.setInstanceName("ferry-interop-" + ProcessHandle.current().pid());
    consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
    consumer.setAutoCommit(false);
    consumer.setPullBatchSize(256);
    consumer.subscribe(topic, "*");
    consumer.start();
    BufferedWriter out = stdout();
    int got = 0;
    Map<MessageQueue, Long> next = new HashMap<>();
    try {
      long deadline = System.currentTimeMillis() + timeoutMs;
      long stopAt = Long.MAX_VALUE;
      while (true) {
        long now = System.currentTimeMillis();
        if (now >= deadline || now >= stopAt) {
          break;
        }
        List<MessageExt> batch = consumer.poll(Math.min(1000, Math.max(1, deadline - now)));
        for (MessageExt m : batch) {
          out.write(line(m));
          got++;
          MessageQueue mq = new MessageQueue(m.getTopic(), m.getBrokerName(), m.getQueueId());
          next.merge(mq, m.getQueueOffset() + 1, Math::max);
        }
        if (got >= count && stopAt == Long.MAX_VALUE) {
          stopAt = System.currentTimeMillis() + lingerMs;
        }
      }
      consumer.commitSync();
      persistSync(consumer, need(opts, "group"), next);
    } finally {
      out.flush();
      consumer.shutdown();
    }
    System.err.println("consumed " + got + " of " + count);
    return got >= count ? 0 : 1;
  }

  /** Writes every queue's next offset to its broker synchronously (see the header). */
  private static void persistSync(DefaultLitePullConsumer consumer, String group,
      Map<MessageQueue, Long> next) throws Exception {
    MQClientInstance client = MQClientManager.getInstance().getOrCreateMQClientInstance(consumer);
    // UpdateConsumerOffsetRequestHeader moved from org.apache.rocketmq.common.protocol.header
    // (4.9.x) to org.apache.rocketmq.remoting.protocol.header (5.x); its setters and
    // MQClientAPIImpl.updateConsumerOffset(String, header, long) are the same in both.
    Class<?> headerClass;
    try {
      headerClass = Class.forName(
          "org.apache.rocketmq.remoting.protocol.header.UpdateConsumerOffsetRequestHeader");
    } catch (ClassNotFoundException e) {
      headerClass = Class.forName(
          "org.apache.rocketmq.common.protocol.header.UpdateConsumerOffsetRequestHeader");
    }
    Object api = client.getMQClientAPIImpl();
    Method update = api.getClass().getMethod("updateConsumerOffset", String.class, headerClass,
        long.class);
    for (Map.Entry<MessageQueue, Long> e : new TreeMap<>(next).entrySet()) {
      MessageQueue mq = e.getKey();
      String addr = client.findBrokerAddressInPublish(mq.getBrokerName());
      if (addr == null) {
        throw new IllegalStateException("no broker address for " + mq);
      }
      Object h = headerClass.getConstructor().newInstance();
      headerClass.getMethod("setConsumerGroup", String.class).invoke(h, group);
      headerClass.getMethod("setTopic", String.class).invoke(h, mq.getTopic());
      headerClass.getMethod("setQueueId", Integer.class).invoke(h, mq.getQueueId());
      headerClass.getMethod("setCommitOffset", Long.class).invoke(h, e.getValue());
      try {
        update.invoke(api, addr, h, 5000L);
      } catch (java.lang.reflect.InvocationTargetException ex) {
        throw ex.getCause() instanceof Exception ? (Exception) ex.getCause() : ex;
      }
      System.err.println("committed " + mq + " at " + e.getValue());
    }
  }

  private static String line(MessageExt m) {
    StringBuilder b = new StringBuilder(256);
    b.append("{\"queue\":").append(m.getQueueId())
        .append(",\"offset\":").append(m.getQueueOffset())
        .append(",\"tags\":").append(Json.str(m.getTags()))
        .append(",\"keys\":").append(Json.str(m.getKeys()))
        .append(",\"msg_id\":").append(Json.str(m.getMsgId()))
        .append(",\"props\":{");
    boolean first = true;
    for (Map.Entry<String, String> e : new TreeMap<>(m.getProperties()).entrySet()) {
      if (!first) {
        b.append(',');
      }
      first = false;
      b.append(Json.str(e.getKey())).append(':').append(Json.str(e.getValue()));
    }
    b.append("},\"body_hex\":\"").append(Payload.hex(m.getBody())).append("\"}\n");
    return b.toString();
  }

  private static BufferedWriter stdout() {
    return new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16);
  }
}
