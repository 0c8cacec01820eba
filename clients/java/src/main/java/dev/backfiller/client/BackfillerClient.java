package dev.backfiller.client;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonDeserializer;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.module.SimpleModule;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonSerializer;
import com.fasterxml.jackson.databind.SerializerProvider;
import dev.backfiller.client.generated.Types;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A typed client of Backfiller's public GraphQL API (v1) over the JDK's {@code java.net.http}.
 *
 * <p>The input and enum types are generated ({@code generated/Types.java}, by GraphQL Code
 * Generator's {@code java} plugin from {@code schema.graphql}); the operations are
 * {@code operations.graphql} beside this class. A refused request throws
 * {@link UserErrorsException}; no usable answer throws {@link TransportException}.
 */
public final class BackfillerClient {
  /** Answers decode leniently: unknown fields are ignored, unknown enum values become null. */
  public static final ObjectMapper MAPPER = mapper();

  private static final String DOCUMENT = readDocument();
  // HTTP/1.1: over http://, the JDK would otherwise ask to upgrade to h2c with the request body.
  private final HttpClient http =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  private final URI endpoint;
  private final String token;

  /** A client of the server at {@code baseUrl} (http://host:port); {@code token} may be null. */
  public BackfillerClient(String baseUrl, String token) {
    this.endpoint = URI.create(baseUrl.replaceAll("/+$", "") + "/graphql/v1");
    this.token = token == null || token.isEmpty() ? null : token;
  }

  // -- the @oneOf inputs: each helper sets exactly one field -----------------------------------

  public static Types.BackfillTargetInput job(String name) {
    Types.BackfillTargetInput target = new Types.BackfillTargetInput(null);
    target.setJob(name);
    return target;
  }

  public static Types.PartitionSelectionInput range(String start, String end) {
    Types.PartitionRangeInput range = new Types.PartitionRangeInput(null);
    range.setStart(start);
    range.setEnd(end);
    Types.PartitionSelectionInput selection = new Types.PartitionSelectionInput(null);
    selection.setRange(range);
    return selection;
  }

  public static Types.PartitionSelectionInput keys(String... keys) {
    Types.PartitionSelectionInput selection = new Types.PartitionSelectionInput(null);
    selection.setKeys(List.of(keys));
    return selection;
  }

  public static Types.PartitionSelectionInput all() {
    Types.PartitionSelectionInput selection = new Types.PartitionSelectionInput(null);
    selection.setAll(true);
    return selection;
  }

  public static Types.LaunchBackfillInput launchInput(
      Types.BackfillTargetInput target, Types.PartitionSelectionInput partitions) {
    Types.LaunchBackfillInput input = new Types.LaunchBackfillInput(null);
    input.setTarget(target);
    input.setPartitions(partitions);
    return input;
  }

  /**
   * The JSON of an input. The generated classes build every nested input object, set or not,
   * so empty objects are dropped, and each @oneOf input must then hold exactly one field.
   */
  public static ObjectNode inputJson(Types.LaunchBackfillInput input) {
    return withOneOfs(MAPPER.valueToTree(input));
  }

  private static ObjectNode withOneOfs(ObjectNode json) {
    for (String oneOf : List.of("target", "partitions")) {
      JsonNode value = json.get(oneOf);
      if (value instanceof ObjectNode object) {
        dropEmptyObjects(object);
      }
      if (value == null || value.size() != 1) {
        throw new IllegalArgumentException(
            oneOf + " is @oneOf: set exactly one of its fields, not " + value);
      }
    }
    return json;
  }

  private static void dropEmptyObjects(ObjectNode object) {
    Iterator<Map.Entry<String, JsonNode>> fields = object.fields();
    while (fields.hasNext()) {
      JsonNode value = fields.next().getValue();
      if (value instanceof ObjectNode nested) {
        dropEmptyObjects(nested);
        if (nested.isEmpty()) {
          fields.remove();
        }
      }
    }
  }

  // -- operations ---------------------------------------------------------------------------

  public Model.Backfill launch(Types.LaunchBackfillInput input) {
    JsonNode data = execute("LaunchBackfill", Map.of("input", inputJson(input)));
    return payload(data.get("launchBackfill"), "backfill", Model.Backfill.class);
  }

  public Model.Preview preview(Types.LaunchBackfillInput input) {
    JsonNode data = execute("PreviewBackfill", Map.of("input", inputJson(input)));
    return payload(data.get("previewBackfill"), "preview", Model.Preview.class);
  }

  /** The backfill, or null when no backfill has this id. */
  public Model.Backfill get(String id) {
    return decode(execute("GetBackfill", Map.of("id", id)).get("backfill"), Model.Backfill.class);
  }

  /** One page of backfills, newest first; pass the last page's endCursor as {@code after}. */
  public Model.Page list(int first, String after) {
    Map<String, Object> variables = new LinkedHashMap<>();
    variables.put("first", first);
    variables.put("after", after);
    return decode(execute("ListBackfills", variables).get("backfills"), Model.Page.class);
  }

  public Model.Backfill pause(String id) {
    return payload(execute("PauseBackfill", Map.of("id", id)).get("pauseBackfill"), "backfill",
        Model.Backfill.class);
  }

  public Model.Backfill resume(String id) {
    return payload(execute("ResumeBackfill", Map.of("id", id)).get("resumeBackfill"), "backfill",
        Model.Backfill.class);
  }

  public Model.Backfill cancel(String id) {
    return payload(execute("CancelBackfill", Map.of("id", id)).get("cancelBackfill"), "backfill",
        Model.Backfill.class);
  }

  public Model.Backfill retry(String id, List<Types.RetryInclude> include) {
    Types.RetryBackfillInput input = new Types.RetryBackfillInput(null);
    input.setId(id);
    input.setInclude(include);
    JsonNode data = execute("RetryBackfill", Map.of("input", MAPPER.valueToTree(input)));
    return payload(data.get("retryBackfill"), "backfill", Model.Backfill.class);
  }

  /**
   * What {@link #update} changes of a backfill: only what is set here; {@code null} removes the
   * limit, the title or the description.
   */
  public static final class Changes {
    private final ObjectNode fields = MAPPER.createObjectNode();

    /** At most this many runs at once (1..10000); {@code null}: no limit of its own. */
    public Changes maxConcurrentRuns(Integer limit) {
      fields.put("maxConcurrentRuns", limit);
      return this;
    }

    /** Its priority (-1000..1000). */
    public Changes priority(int priority) {
      fields.put("priority", priority);
      return this;
    }

    public Changes title(String title) {
      fields.put("title", title);
      return this;
    }

    public Changes description(String description) {
      fields.put("description", description);
      return this;
    }
  }

  /**
   * Change a backfill that is not finished: its limit, priority, title or description; what
   * {@code changes} does not set stays. A lower limit holds from the daemon's next claim; runs
   * in flight finish.
   */
  public Model.Backfill update(String id, Changes changes) {
    ObjectNode input = changes.fields.deepCopy();
    input.put("id", id);
    JsonNode data = execute("UpdateBackfill", Map.of("input", input));
    return payload(data.get("updateBackfill"), "backfill", Model.Backfill.class);
  }

  /**
   * Record partitions of a job (or assets) as SUCCEEDED or SKIPPED without running them, with a
   * reason (audited); returns how many. A backfill running one of them refuses it all
   * ({@code PARTITIONS_RUNNING}).
   */
  public int markPartitions(
      Types.BackfillTargetInput target,
      Types.PartitionSelectionInput partitions,
      Types.PartitionMarkStatus status,
      String reason) {
    ObjectNode input = MAPPER.createObjectNode();
    input.set("target", MAPPER.valueToTree(target));
    input.set("partitions", MAPPER.valueToTree(partitions));
    input.put("status", status.name());
    input.put("reason", reason);
    JsonNode data = execute("MarkPartitions", Map.of("input", withOneOfs(input)));
    return payload(data.get("markPartitions"), "marked", Integer.class);
  }

  // -- transport ----------------------------------------------------------------------------

  private JsonNode execute(String operation, Map<String, Object> variables) {
    ObjectNode body = MAPPER.createObjectNode();
    body.put("query", DOCUMENT);
    body.put("operationName", operation);
    body.set("variables", MAPPER.valueToTree(variables));
    HttpRequest.Builder request = HttpRequest.newBuilder(endpoint)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body.toString()));
    if (token != null) {
      request.header("Authorization", "Bearer " + token);
    }
    HttpResponse<String> response;
    try {
      response = http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new TransportException("cannot reach " + endpoint + ": " + e, 0, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new TransportException("interrupted", 0, e);
    }
    JsonNode answer;
    try {
      answer = MAPPER.readTree(response.body());
    } catch (IOException e) {
      String text = response.body();
      throw new TransportException(
          "HTTP " + response.statusCode() + ": " + text.substring(0, Math.min(200, text.length())),
          response.statusCode(), e);
    }
    JsonNode errors = answer.get("errors");
    if (errors != null && errors.size() > 0) {
      List<String> messages = new ArrayList<>();
      errors.forEach(e -> messages.add(e.path("message").asText()));
      throw new TransportException(
          "HTTP " + response.statusCode() + ": " + String.join("; ", messages), response.statusCode(), null);
    }
    if (response.statusCode() >= 400 || answer.get("data") == null) {
      throw new TransportException("HTTP " + response.statusCode(), response.statusCode(), null);
    }
    return answer.get("data");
  }

  private static <T> T payload(JsonNode payload, String field, Class<T> type) {
    JsonNode errors = payload.get("userErrors");
    if (errors != null && errors.size() > 0) {
      List<Model.UserError> found = new ArrayList<>();
      errors.forEach(e -> found.add(decode(e, Model.UserError.class)));
      throw new UserErrorsException(found);
    }
    return decode(payload.get(field), type);
  }

  private static <T> T decode(JsonNode node, Class<T> type) {
    if (node == null || node.isNull()) {
      return null;
    }
    try {
      return MAPPER.treeToValue(node, type);
    } catch (IOException e) {
      throw new TransportException("unexpected answer: " + e.getMessage(), 200, e);
    }
  }

  private static ObjectMapper mapper() {
    SimpleModule time = new SimpleModule("DateTime");
    time.addDeserializer(OffsetDateTime.class, new JsonDeserializer<OffsetDateTime>() {
      @Override
      public OffsetDateTime deserialize(JsonParser p, DeserializationContext c) throws IOException {
        return OffsetDateTime.parse(p.getText());
      }
    });
    time.addSerializer(OffsetDateTime.class, new JsonSerializer<OffsetDateTime>() {
      @Override
      public void serialize(OffsetDateTime value, JsonGenerator g, SerializerProvider p)
          throws IOException {
        g.writeString(value.toString());
      }
    });
    return new ObjectMapper()
        .registerModule(time)
        .setSerializationInclusion(JsonInclude.Include.NON_NULL)
        .disable(SerializationFeature.FAIL_ON_EMPTY_BEANS)
        .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
        .enable(DeserializationFeature.READ_UNKNOWN_ENUM_VALUES_AS_NULL);
  }

  private static String readDocument() {
    try (InputStream in = BackfillerClient.class.getResourceAsStream("operations.graphql")) {
      if (in == null) {
        throw new IllegalStateException("operations.graphql is missing from the classpath");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
