package dev.layerbench.ycsb;

import java.sql.BatchUpdateException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.Vector;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;
import site.ycsb.StringByteIterator;

/**
 * YCSB over PostgreSQL's JDBC driver: one connection per client thread (YCSB makes one DB object
 * per thread), autocommit, and a prepared statement per operation and field set.
 *
 * <p>Properties: {@code postgres.host} (127.0.0.1), {@code postgres.port} (5432),
 * {@code postgres.user} (postgres), {@code postgres.password} (none), {@code postgres.db}
 * (postgres), {@code postgres.batchsize} (100 while loading, 1 otherwise), and YCSB's own
 * {@code table}, {@code fieldcount}, {@code fieldnameprefix}.
 *
 * <p>The table is {@code TABLE(ycsb_key VARCHAR(255) PRIMARY KEY, field0 TEXT, ...)}, created on
 * init if missing.
 */
public class PostgresDB extends DB {
  private static final String KEY = "ycsb_key";
  // Any fixed number: every thread of every client takes the same lock to create the table.
  private static final long CREATE_LOCK = 0x4C42594353424442L;
  // Table and field names are put into SQL text: only plain identifiers are accepted.
  private static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,62}");

  private Connection connection;
  private String tableName;
  private List<String> columns;
  private final Map<String, PreparedStatement> statements = new HashMap<>();
  private final Failures failures = new Failures("postgres");
  private int batchSize;
  private PreparedStatement batch;
  private int batched;

  @Override
  public void init() throws DBException {
    Properties p = getProperties();
    int fieldCount = Integer.parseInt(p.getProperty("fieldcount", "10"));
    String prefix = p.getProperty("fieldnameprefix", "field");
    columns = new ArrayList<>();
    for (int i = 0; i < fieldCount; i++) {
      columns.add(identifier(prefix + i));
    }
    // The load phase (dotransactions=false) only inserts: batching makes it several times faster.
    boolean loading = !Boolean.parseBoolean(p.getProperty("dotransactions", "true"));
    batchSize = Integer.parseInt(p.getProperty("postgres.batchsize", loading ? "100" : "1"));
    try {
      connection = DriverManager.getConnection(url(p), connectionProperties(p));
      connection.setAutoCommit(true);
      tableName = identifier(p.getProperty("table", "usertable"));
      createTable(tableName);
    } catch (SQLException e) {
      throw new DBException("PostgreSQL at " + url(p) + ": " + Failures.describe(e), e);
    }
  }

  private static String url(Properties p) {
    return "jdbc:postgresql://" + p.getProperty("postgres.host", "127.0.0.1") + ":"
        + p.getProperty("postgres.port", "5432") + "/" + p.getProperty("postgres.db", "postgres");
  }

  private static Properties connectionProperties(Properties p) {
    Properties c = new Properties();
    c.setProperty("user", p.getProperty("postgres.user", "postgres"));
    String password = p.getProperty("postgres.password");
    if (password != null) {
      c.setProperty("password", password);
    }
    // One multi-row INSERT per batch instead of one statement per row.
    c.setProperty("reWriteBatchedInserts", "true");
    c.setProperty("ApplicationName", "layerbench-ycsb");
    return c;
  }

  private static String identifier(String name) throws DBException {
    if (!IDENTIFIER.matcher(name).matches()) {
      throw new DBException("not a plain SQL identifier: " + name);
    }
    return name;
  }

  /**
   * CREATE TABLE IF NOT EXISTS is not safe against itself: two sessions can both see no table and
   * one fails on the catalog's unique index. A transaction-scoped advisory lock serialises the
   * threads (and concurrent clients); a duplicate error is still tolerated from anyone else.
   */
  private void createTable(String table) throws SQLException {
    StringBuilder ddl = new StringBuilder("CREATE TABLE IF NOT EXISTS " + table + " (" + KEY
        + " VARCHAR(255) PRIMARY KEY");
    for (String column : columns) {
      ddl.append(", ").append(column).append(" TEXT");
    }
    ddl.append(')');
    connection.setAutoCommit(false);
    try (Statement st = connection.createStatement()) {
      st.execute("SELECT pg_advisory_xact_lock(" + CREATE_LOCK + ")");
      st.execute(ddl.toString());
      connection.commit();
    } catch (SQLException e) {
      connection.rollback();
      // 42P07 duplicate_table, 23505 unique_violation (on pg_type): someone else created it.
      if (!"42P07".equals(e.getSQLState()) && !"23505".equals(e.getSQLState())) {
        throw e;
      }
    } finally {
      connection.setAutoCommit(true);
    }
  }

  @Override
  public void cleanup() throws DBException {
    int pending = batched;
    try {
      flush();
    } catch (SQLException e) {
      // YCSB prints this on stdout and stderr; the inserts were already counted as BATCHED_OK.
      throw new DBException("PostgreSQL: the last " + pending + " batched inserts failed: " + Failures.describe(e),
          e);
    } finally {
      failures.summarize();
      close();
    }
  }

  private void close() {
    try {
      for (PreparedStatement ps : statements.values()) {
        ps.close();
      }
      if (connection != null) {
        connection.close();
      }
    } catch (SQLException e) {
      System.err.println("layerbench-ycsb postgres: closing the connection: " + Failures.describe(e));
    }
  }

  /** One statement per operation, table and field set, prepared the first time it is needed. */
  private PreparedStatement statement(String op, String table, Collection<String> fields, Supplier<String> sql)
      throws SQLException, DBException {
    if (!table.equals(tableName)) {
      identifier(table); // YCSB passes its "table" property; anything else is checked before it reaches SQL
    }
    String id = op + ' ' + table + ' ' + fields;
    PreparedStatement ps = statements.get(id);
    if (ps == null) {
      ps = connection.prepareStatement(sql.get());
      statements.put(id, ps);
    }
    return ps;
  }

  /** The requested fields in a fixed order (null: every column), checked before they reach SQL text. */
  private List<String> selected(Set<String> fields) throws DBException {
    if (fields == null) {
      return columns;
    }
    List<String> names = new ArrayList<>();
    for (String f : new TreeSet<>(fields)) {
      names.add(identifier(f));
    }
    return names;
  }

  private static List<String> sortedNames(Map<String, ByteIterator> values) throws DBException {
    List<String> names = new ArrayList<>();
    for (String f : new TreeSet<>(values.keySet())) {
      names.add(identifier(f));
    }
    return names;
  }

  private static void copyRow(ResultSet rs, Map<String, ByteIterator> into) throws SQLException {
    ResultSetMetaData meta = rs.getMetaData();
    for (int i = 1; i <= meta.getColumnCount(); i++) {
      String value = rs.getString(i);
      if (value != null) {
        into.put(meta.getColumnName(i), new StringByteIterator(value));
      }
    }
  }

  @Override
  public Status read(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    try {
      List<String> names = selected(fields);
      PreparedStatement ps = statement("read", table, names,
          () -> "SELECT " + String.join(", ", names) + " FROM " + table + " WHERE " + KEY + " = ?");
      ps.setString(1, key);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return Status.NOT_FOUND;
        }
        copyRow(rs, result);
        return Status.OK;
      }
    } catch (SQLException | DBException e) {
      return failed("read", e);
    }
  }

  @Override
  public Status scan(String table, String startkey, int recordcount, Set<String> fields,
                     Vector<HashMap<String, ByteIterator>> result) {
    try {
      List<String> names = selected(fields);
      PreparedStatement ps = statement("scan", table, names,
          () -> "SELECT " + String.join(", ", names) + " FROM " + table + " WHERE " + KEY + " >= ? ORDER BY "
              + KEY + " LIMIT ?");
      ps.setString(1, startkey);
      ps.setInt(2, recordcount);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          HashMap<String, ByteIterator> row = new HashMap<>();
          copyRow(rs, row);
          result.add(row);
        }
      }
      return Status.OK;
    } catch (SQLException | DBException e) {
      return failed("scan", e);
    }
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    try {
      List<String> names = sortedNames(values);
      PreparedStatement ps = statement("update", table, names,
          () -> "UPDATE " + table + " SET " + String.join(" = ?, ", names) + " = ? WHERE " + KEY + " = ?");
      int i = 1;
      for (String name : names) {
        ps.setString(i++, values.get(name).toString());
      }
      ps.setString(i, key);
      return ps.executeUpdate() == 0 ? Status.NOT_FOUND : Status.OK;
    } catch (SQLException | DBException e) {
      return failed("update", e);
    }
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    try {
      List<String> names = sortedNames(values);
      PreparedStatement ps = statement("insert", table, names,
          () -> "INSERT INTO " + table + " (" + KEY + ", " + String.join(", ", names) + ") VALUES (?"
              + ", ?".repeat(names.size()) + ")");
      ps.setString(1, key);
      int i = 2;
      for (String name : names) {
        ps.setString(i++, values.get(name).toString());
      }
      if (batchSize <= 1) {
        ps.executeUpdate();
        return Status.OK;
      }
      return addToBatch(ps);
    } catch (SQLException | DBException e) {
      return failed("insert", e);
    }
  }

  /**
   * Queues the bound insert. It is sent when the batch is full (this insert then carries the batch's
   * time and its success or failure) or at cleanup; until then YCSB counts it as BATCHED_OK.
   */
  private Status addToBatch(PreparedStatement ps) throws SQLException {
    if (batch != null && batch != ps) {
      flush(); // another field set: one batch holds one statement
    }
    ps.addBatch();
    batch = ps;
    batched++;
    if (batched < batchSize) {
      return Status.BATCHED_OK;
    }
    flush();
    return Status.OK;
  }

  private void flush() throws SQLException {
    if (batch == null) {
      return;
    }
    PreparedStatement ps = batch;
    try {
      ps.executeBatch();
    } catch (BatchUpdateException e) {
      // The driver wraps the server's error; its cause says which row and why.
      throw e.getNextException() != null ? e.getNextException() : e;
    } finally {
      batch = null;
      batched = 0;
      ps.clearBatch();
    }
  }

  @Override
  public Status delete(String table, String key) {
    try {
      PreparedStatement ps = statement("delete", table, List.of(),
          () -> "DELETE FROM " + table + " WHERE " + KEY + " = ?");
      ps.setString(1, key);
      return ps.executeUpdate() == 0 ? Status.NOT_FOUND : Status.OK;
    } catch (SQLException | DBException e) {
      return failed("delete", e);
    }
  }

  private Status failed(String op, Exception e) {
    failures.record(op, e);
    return Status.ERROR;
  }
}
