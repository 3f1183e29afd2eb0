package dev.layerbench.ycsb;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.Transaction;
import redis.clients.jedis.exceptions.JedisException;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;
import site.ycsb.StringByteIterator;

/**
 * YCSB over Redis with Jedis: one connection per client thread.
 *
 * <p>A record is a hash at its key. Redis has no ordered scan over keys, so every key is also a
 * member of one sorted set whose score is a hash of the key: a scan reads the members from the
 * start key's score upwards, then their hashes in one pipeline. Insert and delete change the hash
 * and the index in one MULTI/EXEC, so the two never disagree and each costs one round trip.
 *
 * <p>Properties: {@code redis.host} (127.0.0.1), {@code redis.port} (6379),
 * {@code redis.timeout.ms} (10000), {@code redis.password} (none: no AUTH).
 */
public class RedisDB extends DB {
  /** The sorted set of every key; YCSB's keys start with "user", so it cannot collide with one. */
  static final String INDEX = "layerbench:index";

  private Jedis jedis;
  private final Failures failures = new Failures("redis");

  @Override
  public void init() throws DBException {
    Properties p = getProperties();
    String host = p.getProperty("redis.host", "127.0.0.1");
    int port = Integer.parseInt(p.getProperty("redis.port", "6379"));
    int timeoutMs = Integer.parseInt(p.getProperty("redis.timeout.ms", "10000"));
    try {
      jedis = new Jedis(host, port, timeoutMs);
      String password = p.getProperty("redis.password");
      if (password != null) {
        jedis.auth(password); // requirepass: the server's per-run password
      }
      jedis.ping(); // fail here, in init, rather than on every operation
    } catch (JedisException e) {
      throw new DBException("Redis at " + host + ":" + port + ": " + Failures.describe(e), e);
    }
  }

  @Override
  public void cleanup() throws DBException {
    failures.summarize();
    if (jedis != null) {
      jedis.close();
    }
  }

  /**
   * The key's index score: FNV-1a over its UTF-8 bytes, cut to 53 bits so that the double holds it
   * exactly (equal keys, equal scores; a scan's start key is found again).
   */
  static double score(String key) {
    long h = 0xcbf29ce484222325L;
    for (byte b : key.getBytes(StandardCharsets.UTF_8)) {
      h ^= b & 0xff;
      h *= 0x100000001b3L;
    }
    return (double) (h >>> 11);
  }

  @Override
  public Status read(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    try {
      Map<String, String> record = fields == null ? jedis.hgetAll(key) : selected(key, fields);
      if (record.isEmpty()) {
        return Status.NOT_FOUND;
      }
      StringByteIterator.putAllAsByteIterators(result, record);
      return Status.OK;
    } catch (JedisException e) {
      return failed("read", e);
    }
  }

  private Map<String, String> selected(String key, Set<String> fields) {
    String[] names = fields.toArray(new String[0]);
    return present(names, jedis.hmget(key, names));
  }

  /** HMGET answers nil for a missing field (or key): only the fields that exist are a record. */
  private static Map<String, String> present(String[] names, List<String> values) {
    Map<String, String> record = new HashMap<>();
    for (int i = 0; i < names.length; i++) {
      if (values.get(i) != null) {
        record.put(names[i], values.get(i));
      }
    }
    return record;
  }

  @Override
  public Status scan(String table, String startkey, int recordcount, Set<String> fields,
                     Vector<HashMap<String, ByteIterator>> result) {
    try {
      List<String> keys = jedis.zrangeByScore(INDEX, score(startkey), Double.POSITIVE_INFINITY, 0, recordcount);
      String[] names = fields == null ? null : fields.toArray(new String[0]);
      List<Response<?>> replies = new ArrayList<>();
      try (Pipeline pipeline = jedis.pipelined()) {
        for (String key : keys) {
          replies.add(names == null ? pipeline.hgetAll(key) : pipeline.hmget(key, names));
        }
        pipeline.sync();
      }
      for (Response<?> reply : replies) {
        HashMap<String, ByteIterator> row = new HashMap<>();
        StringByteIterator.putAllAsByteIterators(row, record(names, reply.get()));
        result.add(row);
      }
      return Status.OK;
    } catch (JedisException e) {
      return failed("scan", e);
    }
  }

  @SuppressWarnings("unchecked")
  private static Map<String, String> record(String[] names, Object reply) {
    return names == null ? (Map<String, String>) reply : present(names, (List<String>) reply);
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    try {
      // YCSB updates only keys it has inserted, so no existence check (it would cost a round trip).
      jedis.hset(key, StringByteIterator.getStringMap(values));
      return Status.OK;
    } catch (JedisException e) {
      return failed("update", e);
    }
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    try {
      Transaction tx = jedis.multi();
      tx.hset(key, StringByteIterator.getStringMap(values));
      tx.zadd(INDEX, score(key), key);
      return executed("insert", tx.exec()) ? Status.OK : Status.ERROR;
    } catch (JedisException e) {
      return failed("insert", e);
    }
  }

  @Override
  public Status delete(String table, String key) {
    try {
      Transaction tx = jedis.multi();
      Response<Long> deleted = tx.del(key);
      tx.zrem(INDEX, key);
      if (!executed("delete", tx.exec())) {
        return Status.ERROR;
      }
      return deleted.get() == 0 ? Status.NOT_FOUND : Status.OK;
    } catch (JedisException e) {
      return failed("delete", e);
    }
  }

  /**
   * EXEC answers null when the transaction was discarded, and a command that failed inside it
   * (e.g. OOM under maxmemory noeviction) is an exception among the replies, not a throw.
   */
  private boolean executed(String op, List<Object> replies) {
    if (replies == null) {
      failures.record(op, new JedisException("transaction discarded"));
      return false;
    }
    for (Object reply : replies) {
      if (reply instanceof Exception e) {
        failures.record(op, e);
        return false;
      }
    }
    return true;
  }

  private Status failed(String op, Exception e) {
    failures.record(op, explained(e));
    return Status.ERROR;
  }

  /**
   * Jedis reads the replies to the queued commands of a MULTI and drops them, so when Redis refuses
   * one (its reply says why) all that is left is EXECABORT: say what can cause it.
   */
  private static Exception explained(Exception e) {
    String message = e.getMessage();
    if (message == null || !message.startsWith("EXECABORT")) {
      return e;
    }
    return new JedisException(message + " (Redis refused a command of the transaction: out of memory under"
        + " maxmemory with noeviction, a read-only replica, or a failing background save)", e);
  }
}
