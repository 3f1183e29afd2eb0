package dev.layerbench.ycsb;

/**
 * Failed operations of one client thread, reported on stderr.
 *
 * <p>YCSB counts a failure only as a {@code Return=ERROR}; the cause would be lost. The first few
 * causes are printed, the rest counted and summed up at cleanup, so a run that fails every
 * operation does not flood stderr (which layerbench keeps with the trial).
 */
final class Failures {
  private static final int SHOWN = 3;

  private final String binding;
  private long count;

  Failures(String binding) {
    this.binding = binding;
  }

  /** Records one failure of {@code op} and says why, if it is one of the first few. */
  void record(String op, Exception cause) {
    count++;
    if (count <= SHOWN) {
      System.err.println("layerbench-ycsb " + binding + ": " + op + " failed: " + describe(cause));
    }
  }

  /** The last word at cleanup: how many failures were not shown. */
  void summarize() {
    if (count > SHOWN) {
      System.err.println("layerbench-ycsb " + binding + ": " + (count - SHOWN) + " more failures not shown ("
          + count + " in this thread)");
    }
  }

  static String describe(Throwable cause) {
    String message = cause.getMessage();
    return cause.getClass().getSimpleName() + (message == null ? "" : ": " + message.strip().replace('\n', ' '));
  }
}
