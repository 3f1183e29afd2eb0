package dev.layerbench.ycsb;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.CqlSessionBuilder;
import com.datastax.oss.driver.api.core.DefaultConsistencyLevel;
import com.datastax.oss.driver.api.core.DriverException;
import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverConfigLoader;
import com.datastax.oss.driver.api.core.cql.BoundStatement;
import com.datastax.oss.driver.api.core.cql.ColumnDefinition;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.Row;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.Vector;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;
import site.ycsb.StringByteIterator;

/**
 * YCSB over CQL with the Java driver 4.x: one session per client JVM, shared by its threads (the
 * driver multiplexes requests over its connections; a session per thread would only add
 * connections), and a prepared statement per operation and field set, prepared once.
 *
 * <p>Properties: {@code cassandra.host} (127.0.0.1), {@code cassandra.port} (9042),
 * {@code cassandra.localdc} (datacenter1: SimpleSnitch's), {@code cassandra.keyspace} (ycsb),
 * {@code cassandra.readconsistencylevel} and {@code cassandra.writeconsistencylevel} (ONE: one
 * replica answers; layerbench runs single-node servers), {@code cassandra.replication} (1),
 * {@code cassandra.timeout.ms} (10000), {@code cassandra.username} (cassandra) and
 * {@code cassandra.password} (none: no authentication), and YCSB's own {@code table}, {@code fieldcount},
 * {@code fieldnameprefix}.
 *
 * <p>The table is {@code TABLE(y_id text PRIMARY KEY, field0 text, ...)} in its keyspace, both
 * created by the load phase's first thread if missing. A scan reads from the start key's token upwards, in token order:
 * Cassandra keeps rows by the hash of their key, so that is the only order it can scan.
 */
public class CassandraDB extends DB {
  private static final String KEY = "y_id";
  // Names are put into CQL text: only plain identifiers are accepted.
  private static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,47}");

  // Shared by every thread of this client; closed by the last thread to clean up.
  private static final Object LOCK = new Object();
  private static CqlSession session;
  private static DBException openFailure;
  private static int users;
  private static final Map<String, PreparedStatement> PREPARED = new ConcurrentHashMap<>();

  private final Failures failures = new Failures("cassandra");
  private String table;
  private List<String> columns;
  private ConsistencyLevel readLevel;
  private ConsistencyLevel writeLevel;

  /**
   * YCSB sets the properties of every thread's DB before its clock starts and calls init() after:
   * the session (a JVM's first one takes seconds: netty, the driver) opens here, so that a
   * time-bounded run measures operations, not the driver starting. A failure is kept for init().
   */
  @Override
  public void setProperties(Properties p) {
    super.setProperties(p);
    synchronized (LOCK) {
      if (session == null && openFailure == null) {
        try {
          open(p);
        } catch (DBException e) {
          openFailure = e;
        }
      }
    }
  }

  private static void open(Properties p) throws DBException {
    String keyspace = identifier(p.getProperty("cassandra.keyspace", "ycsb"));
    String table = keyspace + "." + identifier(p.getProperty("table", "usertable"));
    session = connect(p);
    try {
      // The load phase (dotransactions=false) creates them; a run finds them.
      if (!Boolean.parseBoolean(p.getProperty("dotransactions", "true"))) {
        createSchema(keyspace, table, fieldNames(p), Integer.parseInt(p.getProperty("cassandra.replication", "1")));
      }
    } catch (DriverException e) {
      session.close();
      session = null;
      throw new DBException("creating " + table + ": " + Failures.describe(e), e);
    }
  }

  @Override
  public void init() throws DBException {
    Properties p = getProperties();
    table = identifier(p.getProperty("cassandra.keyspace", "ycsb")) + "." + identifier(p.getProperty("table", "usertable"));
    columns = fieldNames(p);
    readLevel = level(p, "cassandra.readconsistencylevel");
    writeLevel = level(p, "cassandra.writeconsistencylevel");
    synchronized (LOCK) {
      if (openFailure != null) {
        throw openFailure;
      }
      users++;
    }
  }

  private static List<String> fieldNames(Properties p) throws DBException {
    int count = Integer.parseInt(p.getProperty("fieldcount", "10"));
    String prefix = p.getProperty("fieldnameprefix", "field");
    List<String> names = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      names.add(identifier(prefix + i));
    }
    return names;
  }

  private static ConsistencyLevel level(Properties p, String key) throws DBException {
    String name = p.getProperty(key, "ONE").toUpperCase(Locale.ROOT);
    try {
      return DefaultConsistencyLevel.valueOf(name);
    } catch (IllegalArgumentException e) {
      throw new DBException(key + ": " + name + " is not a consistency level; allowed: ONE, TWO, THREE, QUORUM,"
          + " ALL, LOCAL_QUORUM, EACH_QUORUM, LOCAL_ONE, ANY");
    }
  }

  private static String identifier(String name) throws DBException {
    if (!IDENTIFIER.matcher(name).matches()) {
      throw new DBException("not a plain CQL identifier: " + name);
    }
    return name;
  }

  private static CqlSession connect(Properties p) throws DBException {
    String host = p.getProperty("cassandra.host", "127.0.0.1");
    int port = Integer.parseInt(p.getProperty("cassandra.port", "9042"));
    Duration timeout = Duration.ofMillis(Long.parseLong(p.getProperty("cassandra.timeout.ms", "10000")));
    DriverConfigLoader config = DriverConfigLoader.programmaticBuilder()
        .withDuration(DefaultDriverOption.REQUEST_TIMEOUT, timeout)
        .withDuration(DefaultDriverOption.CONNECTION_INIT_QUERY_TIMEOUT, timeout)
        .withDuration(DefaultDriverOption.METADATA_SCHEMA_REQUEST_TIMEOUT, timeout)
        // Enough requests in flight for every YCSB thread on one connection (the default is 1024).
        .withInt(DefaultDriverOption.CONNECTION_MAX_REQUESTS, 2048)
        // YCSB's RunTime includes each thread's init and cleanup: a session must open and close
        // fast. One node needs no schema or token metadata (no routing to choose), and the
        // driver's event loops need not linger (2 s by default) once it closes.
        .withBoolean(DefaultDriverOption.METADATA_SCHEMA_ENABLED, false)
        .withBoolean(DefaultDriverOption.METADATA_TOKEN_MAP_ENABLED, false)
        .withInt(DefaultDriverOption.NETTY_IO_SHUTDOWN_QUIET_PERIOD, 0)
        .withInt(DefaultDriverOption.NETTY_ADMIN_SHUTDOWN_QUIET_PERIOD, 0)
        // Daemon threads: the JVM ends with YCSB's main, even where nothing closes the session
        // (YCSB's CommandLine never calls cleanup).
        .withBoolean(DefaultDriverOption.NETTY_DAEMON, true)
        .build();
    CqlSessionBuilder builder = CqlSession.builder()
        .addContactPoint(new InetSocketAddress(host, port))
        .withLocalDatacenter(p.getProperty("cassandra.localdc", "datacenter1"))
        .withConfigLoader(config);
    String password = p.getProperty("cassandra.password");
    if (password != null) { // PasswordAuthenticator: the server's per-run role and password
      builder = builder.withAuthCredentials(p.getProperty("cassandra.username", "cassandra"), password);
    }
    try {
      return builder.build();
    } catch (DriverException | IllegalStateException e) {
      throw new DBException("Cassandra at " + host + ":" + port + ": " + Failures.describe(e), e);
    }
  }

  private static void createSchema(String keyspace, String table, List<String> columns, int replication) {
    session.execute("CREATE KEYSPACE IF NOT EXISTS " + keyspace + " WITH replication = {'class': 'SimpleStrategy',"
        + " 'replication_factor': " + replication + "}");
    StringBuilder ddl = new StringBuilder("CREATE TABLE IF NOT EXISTS " + table + " (" + KEY + " text PRIMARY KEY");
    for (String column : columns) {
      ddl.append(", ").append(column).append(" text");
    }
    session.execute(ddl.append(')').toString());
  }

  @Override
  public void cleanup() throws DBException {
    failures.summarize();
    synchronized (LOCK) {
      users--;
      if (users == 0 && session != null) {
        session.close();
        session = null;
        PREPARED.clear();
      }
    }
  }

  private BoundStatement bind(String cql, ConsistencyLevel level, Object... values) {
    PreparedStatement prepared = PREPARED.computeIfAbsent(cql, session::prepare);
    return prepared.bind(values).setConsistencyLevel(level);
  }

  private String selection(Set<String> fields) {
    return fields == null ? "*" : String.join(", ", new TreeSet<>(fields));
  }

  @Override
  public Status read(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    try {
      String cql = "SELECT " + selection(fields) + " FROM " + this.table + " WHERE " + KEY + " = ?";
      Row row = session.execute(bind(cql, readLevel, key)).one();
      if (row == null) {
        return Status.NOT_FOUND;
      }
      putRow(row, result);
      return Status.OK;
    } catch (DriverException e) {
      return failed("read", e);
    }
  }

  @Override
  public Status scan(String table, String startkey, int recordcount, Set<String> fields,
                     Vector<HashMap<String, ByteIterator>> result) {
    try {
      String cql = "SELECT " + selection(fields) + " FROM " + this.table + " WHERE token(" + KEY + ") >= token(?)"
          + " LIMIT ?";
      ResultSet rows = session.execute(bind(cql, readLevel, startkey, recordcount));
      for (Row row : rows) {
        HashMap<String, ByteIterator> values = new HashMap<>();
        putRow(row, values);
        result.add(values);
      }
      return Status.OK;
    } catch (DriverException e) {
      return failed("scan", e);
    }
  }

  private static void putRow(Row row, Map<String, ByteIterator> result) {
    for (ColumnDefinition column : row.getColumnDefinitions()) {
      String name = column.getName().asInternal();
      String value = row.getString(column.getName());
      if (!KEY.equals(name) && value != null) {
        result.put(name, new StringByteIterator(value));
      }
    }
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    try {
      Map<String, String> sorted = new TreeMap<>(StringByteIterator.getStringMap(values));
      List<String> sets = new ArrayList<>();
      for (String field : sorted.keySet()) {
        sets.add(identifier(field) + " = ?");
      }
      String cql = "UPDATE " + this.table + " SET " + String.join(", ", sets) + " WHERE " + KEY + " = ?";
      List<Object> bound = new ArrayList<>(sorted.values());
      bound.add(key);
      session.execute(bind(cql, writeLevel, bound.toArray()));
      return Status.OK;
    } catch (DriverException | DBException e) {
      return failed("update", e);
    }
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    try {
      Map<String, String> sorted = new TreeMap<>(StringByteIterator.getStringMap(values));
      List<String> names = new ArrayList<>(List.of(KEY));
      for (String field : sorted.keySet()) {
        names.add(identifier(field));
      }
      String marks = String.join(", ", java.util.Collections.nCopies(names.size(), "?"));
      String cql = "INSERT INTO " + this.table + " (" + String.join(", ", names) + ") VALUES (" + marks + ")";
      List<Object> bound = new ArrayList<>(List.of(key));
      bound.addAll(sorted.values());
      session.execute(bind(cql, writeLevel, bound.toArray()));
      return Status.OK;
    } catch (DriverException | DBException e) {
      return failed("insert", e);
    }
  }

  @Override
  public Status delete(String table, String key) {
    try {
      session.execute(bind("DELETE FROM " + this.table + " WHERE " + KEY + " = ?", writeLevel, key));
      return Status.OK;
    } catch (DriverException e) {
      return failed("delete", e);
    }
  }

  private Status failed(String op, Exception e) {
    failures.record(op, e);
    return Status.ERROR;
  }
}
