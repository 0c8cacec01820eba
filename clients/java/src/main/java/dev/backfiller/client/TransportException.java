package dev.backfiller.client;

/**
 * No usable answer: the server could not be reached, answered an HTTP error, or answered with
 * top-level GraphQL errors (a missing or refused token, for one: {@link #status()} 401 or 403).
 */
public final class TransportException extends RuntimeException {
  private final int status;

  public TransportException(String message, int status, Throwable cause) {
    super(message, cause);
    this.status = status;
  }

  /** The HTTP status, or 0 when there was no answer. */
  public int status() {
    return status;
  }
}
