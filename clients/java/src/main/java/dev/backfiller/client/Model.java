package dev.backfiller.client;

import com.fasterxml.jackson.databind.JsonNode;
import dev.backfiller.client.generated.Types;
import java.time.OffsetDateTime;
import java.util.List;

/**
 * What the client's operations answer, as records (decoded by Jackson). Enum fields use the
 * generated enums; a value added to the schema later decodes as {@code null} instead of failing
 * (see {@link BackfillerClient#MAPPER}). DateTime is an {@link OffsetDateTime}, JSON a
 * {@link JsonNode}.
 */
public final class Model {
  private Model() {}

  public record Counts(
      int total, int pending, int queued, int running, int succeeded, int failed, int canceled,
      int skipped, double percentDone) {}

  public record Ref(String id) {}

  public record Target(String job) {}

  public record Backfill(
      String id,
      String title,
      Types.BackfillStatus status,
      Types.Reprocess reprocess,
      Types.BackfillOrder order,
      JsonNode runConfig,
      String creator,
      Target target,
      Counts counts,
      OffsetDateTime createdAt,
      OffsetDateTime endedAt,
      Ref parent,
      Integer maxConcurrentRuns,
      int priority,
      String team) {}

  public record Preview(String job, int total, int runs, int skipped, List<String> firstPartitions) {}

  public record PageInfo(boolean hasNextPage, String endCursor) {}

  public record Page(List<Backfill> nodes, PageInfo pageInfo) {}

  /** One reason the server refused a request: its stable code, the input field, a message. */
  public record UserError(List<String> field, String message, String code) {
    /** The code as the generated enum; {@code null} for a code added to the schema later. */
    public Types.UserErrorCode knownCode() {
      try {
        return Types.UserErrorCode.valueOf(code);
      } catch (IllegalArgumentException unknown) {
        return null;
      }
    }
  }
}
