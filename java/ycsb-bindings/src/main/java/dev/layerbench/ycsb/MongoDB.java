package dev.layerbench.ycsb;

import com.mongodb.MongoBulkWriteException;
import com.mongodb.MongoClientSettings;
import com.mongodb.MongoException;
import com.mongodb.ReadPreference;
import com.mongodb.ServerAddress;
import com.mongodb.WriteConcern;
import com.mongodb.client.FindIterable;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.client.MongoCollection;
import com.mongodb.client.MongoCursor;
import com.mongodb.client.MongoDatabase;
import com.mongodb.client.model.Filters;
import com.mongodb.client.model.InsertManyOptions;
import com.mongodb.client.model.Projections;
import com.mongodb.client.model.Sorts;
import com.mongodb.client.result.DeleteResult;
import com.mongodb.client.result.UpdateResult;
import com.mongodb.connection.ClusterConnectionMode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;
import java.util.concurrent.TimeUnit;
import org.bson.Document;
import org.bson.conversions.Bson;
import org.bson.types.Binary;
import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;

/**
 * YCSB over MongoDB's wire protocol with the official sync driver (MongoDB, FerretDB): one client per
 * JVM, shared by its threads (the driver keeps a pool of connections, one per thread in use), opened
 * before YCSB's clock starts and closed by the last thread to clean up.
 *
 * <p>A record is the document {@code {_id: key, field0: <binary>, ...}} in the collection named by
 * YCSB's {@code table}; MongoDB indexes {@code _id} itself, so a scan reads from the start key
 * upwards in key order. The client talks to the one server it is given (a direct connection: no
 * replica-set discovery) and never retries an operation: a failure is counted, not hidden.
 *
 * <p>Properties: {@code mongodb.host} (127.0.0.1), {@code mongodb.port} (27017),
 * {@code mongodb.database} (ycsb), {@code mongodb.writeconcern} (w1: the server acknowledges each
 * write; also acknowledged, unacknowledged, journaled, majority, w2, w3),
 * {@code mongodb.readpreference} (primary; also primaryPreferred, secondary, secondaryPreferred,
 * nearest), {@code mongodb.batchsize} (100 while loading, 1 otherwise: inserts sent together with
 * insertMany), {@code mongodb.timeout.ms} (10000: server selection, connecting, and each reply),
 * and YCSB's own {@code threadcount}.
 */
public class MongoDB extends DB {
  private static final String KEY = "_id";

  // Shared by every thread of this client; closed by the last thread to clean up.
  private static final Object LOCK = new Object();
  private static MongoClient client;
  private static MongoDatabase database;
  private static DBException openFailure;
  private static int users;

  private final Failures failures = new Failures("mongodb");
  private final Map<String, MongoCollection<Document>> collections = new HashMap<>();
  private final List<Document> batch = new ArrayList<>();
  private String batchTable;
  private int batchSize;

  /**
   * YCSB sets the properties of every thread's DB before its clock starts and calls init() after:
   * the client connects here (and proves it with a ping), so that a time-bounded run measures
   * operations, not the driver starting. A failure is kept for init().
   */
  @Override
  public void setProperties(Properties p) {
    super.setProperties(p);
    synchronized (LOCK) {
      if (client == null && openFailure == null) {
        try {
          open(p);
        } catch (DBException e) {
          openFailure = e;
        }
      }
    }
  }

  private static void open(Properties p) throws DBException {
    String host = p.getProperty("mongodb.host", "127.0.0.1");
    int port = Integer.parseInt(p.getProperty("mongodb.port", "27017"));
    String where = "MongoDB at " + host + ":" + port;
    WriteConcern writeConcern = writeConcern(p.getProperty("mongodb.writeconcern", "w1"));
    ReadPreference readPreference = readPreference(p.getProperty("mongodb.readpreference", "primary"));
    int timeoutMs = Integer.parseInt(p.getProperty("mongodb.timeout.ms", "10000"));
    // Every thread may hold a connection at once; a few more for the driver's own monitoring.
    int connections = Integer.parseInt(p.getProperty("threadcount", "1")) + 4;
    MongoClientSettings settings = MongoClientSettings.builder()
        .applyToClusterSettings(b -> b.hosts(List.of(new ServerAddress(host, port)))
            .mode(ClusterConnectionMode.SINGLE)
            .serverSelectionTimeout(timeoutMs, TimeUnit.MILLISECONDS))
        .applyToSocketSettings(b -> b.connectTimeout(timeoutMs, TimeUnit.MILLISECONDS)
            .readTimeout(timeoutMs, TimeUnit.MILLISECONDS))
        .applyToConnectionPoolSettings(b -> b.maxSize(Math.max(connections, 100)))
        .retryWrites(false)
        .retryReads(false)
        .applicationName("layerbench-ycsb")
        .build();
    try {
      client = MongoClients.create(settings);
      database = client.getDatabase(p.getProperty("mongodb.database", "ycsb"))
          .withWriteConcern(writeConcern)
          .withReadPreference(readPreference);
      // The driver connects lazily: fail here, once, rather than on every operation.
      database.runCommand(new Document("ping", 1));
    } catch (MongoException | IllegalArgumentException e) {
      if (client != null) {
        client.close();
      }
      client = null;
      database = null;
      throw new DBException(where + ": " + Failures.describe(e), e);
    }
  }

  private static WriteConcern writeConcern(String name) throws DBException {
    WriteConcern concern = WriteConcern.valueOf(name);
    if (concern == null) {
      throw new DBException("mongodb.writeconcern: " + name + " is not a write concern; allowed: w1, acknowledged,"
          + " unacknowledged, journaled, majority, w2, w3");
    }
    return concern;
  }

  private static ReadPreference readPreference(String name) throws DBException {
    try {
      return ReadPreference.valueOf(name);
    } catch (IllegalArgumentException e) {
      throw new DBException("mongodb.readpreference: " + name + " is not a read preference; allowed: primary,"
          + " primaryPreferred, secondary, secondaryPreferred, nearest");
    }
  }

  @Override
  public void init() throws DBException {
    Properties p = getProperties();
    // The load phase (dotransactions=false) only inserts: batching makes it several times faster.
    boolean loading = !Boolean.parseBoolean(p.getProperty("dotransactions", "true"));
    batchSize = Integer.parseInt(p.getProperty("mongodb.batchsize", loading ? "100" : "1"));
    synchronized (LOCK) {
      if (openFailure != null) {
        throw openFailure;
      }
      users++;
    }
  }

  @Override
  public void cleanup() throws DBException {
    int pending = batch.size();
    try {
      flush();
    } catch (MongoException e) {
      // YCSB prints this on stdout and stderr; the inserts were already counted as BATCHED_OK.
      throw new DBException("MongoDB: the last " + pending + " batched inserts failed: " + Failures.describe(e), e);
    } finally {
      failures.summarize();
      synchronized (LOCK) {
        users--;
        if (users == 0 && client != null) {
          client.close();
          client = null;
          database = null;
        }
      }
    }
  }

  private MongoCollection<Document> collection(String table) {
    return collections.computeIfAbsent(table, database::getCollection);
  }

  private static Bson projection(Set<String> fields) {
    return fields == null ? null : Projections.include(new ArrayList<>(fields));
  }

  /** The record's fields (its binary values; not _id) into {@code result}. */
  private static void copyFields(Document doc, Map<String, ByteIterator> result) {
    for (Map.Entry<String, Object> entry : doc.entrySet()) {
      if (entry.getValue() instanceof Binary value) {
        result.put(entry.getKey(), new ByteArrayByteIterator(value.getData()));
      }
    }
  }

  private static Document record(String key, Map<String, ByteIterator> values) {
    Document doc = new Document(KEY, key);
    for (Map.Entry<String, ByteIterator> entry : values.entrySet()) {
      doc.append(entry.getKey(), entry.getValue().toArray());
    }
    return doc;
  }

  @Override
  public Status read(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    try {
      Document doc = collection(table).find(Filters.eq(KEY, key)).projection(projection(fields)).first();
      if (doc == null) {
        return Status.NOT_FOUND;
      }
      copyFields(doc, result);
      return Status.OK;
    } catch (MongoException e) {
      return failed("read", e);
    }
  }

  @Override
  public Status scan(String table, String startkey, int recordcount, Set<String> fields,
                     Vector<HashMap<String, ByteIterator>> result) {
    FindIterable<Document> found = collection(table).find(Filters.gte(KEY, startkey))
        .sort(Sorts.ascending(KEY))
        .limit(recordcount)
        .batchSize(recordcount) // the whole scan in the first reply: one round trip
        .projection(projection(fields));
    try (MongoCursor<Document> cursor = found.iterator()) {
      while (cursor.hasNext()) {
        HashMap<String, ByteIterator> row = new HashMap<>();
        copyFields(cursor.next(), row);
        result.add(row);
      }
      return Status.OK;
    } catch (MongoException e) {
      return failed("scan", e);
    }
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    try {
      Document set = new Document();
      for (Map.Entry<String, ByteIterator> entry : values.entrySet()) {
        set.append(entry.getKey(), entry.getValue().toArray());
      }
      UpdateResult done = collection(table).updateOne(Filters.eq(KEY, key), new Document("$set", set));
      return done.wasAcknowledged() && done.getMatchedCount() == 0 ? Status.NOT_FOUND : Status.OK;
    } catch (MongoException e) {
      return failed("update", e);
    }
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    try {
      Document doc = record(key, values);
      if (batchSize <= 1) {
        collection(table).insertOne(doc);
        return Status.OK;
      }
      return addToBatch(table, doc);
    } catch (MongoException e) {
      return failed("insert", e);
    }
  }

  /**
   * Queues the record. The batch is sent when full (this insert then carries the batch's time and
   * its success or failure) or at cleanup; until then YCSB counts it as BATCHED_OK.
   */
  private Status addToBatch(String table, Document doc) {
    if (batchTable != null && !batchTable.equals(table)) {
      flush(); // another collection: one batch goes to one collection
    }
    batch.add(doc);
    batchTable = table;
    if (batch.size() < batchSize) {
      return Status.BATCHED_OK;
    }
    flush();
    return Status.OK;
  }

  private void flush() {
    if (batch.isEmpty()) {
      return;
    }
    try {
      // Unordered: the server may write them in any order and reports every failed one.
      collection(batchTable).insertMany(new ArrayList<>(batch), new InsertManyOptions().ordered(false));
    } catch (MongoBulkWriteException e) {
      throw e.getWriteErrors().isEmpty() ? e : new MongoException(e.getWriteErrors().size() + " of " + batch.size()
          + " inserts failed, the first: " + e.getWriteErrors().get(0).getMessage(), e);
    } finally {
      batch.clear();
      batchTable = null;
    }
  }

  @Override
  public Status delete(String table, String key) {
    try {
      DeleteResult done = collection(table).deleteOne(Filters.eq(KEY, key));
      return done.wasAcknowledged() && done.getDeletedCount() == 0 ? Status.NOT_FOUND : Status.OK;
    } catch (MongoException e) {
      return failed("delete", e);
    }
  }

  private Status failed(String op, Exception e) {
    failures.record(op, e);
    return Status.ERROR;
  }
}
