package dev.backfiller.client;

import dev.backfiller.client.generated.Types;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Drives live servers with the Java client, as tests/acceptance/test_java_client.py runs it:
 * BACKFILLER_URL (no auth, no daemon), BACKFILLER_AUTH_URL (the same database, --auth token)
 * and BACKFILLER_TOKEN (an operator's token). Prints "ok STEP" per step; exits 1 at the first
 * failure.
 */
public final class LiveTest {
  private static void check(String step, boolean passed, Object detail) {
    if (!passed) {
      System.out.println("FAIL " + step + ": " + detail);
      System.exit(1);
    }
    System.out.println("ok " + step);
  }

  /** A backfill as the server answers it over plain HTTP, with the value from replaced by to. */
  private static Model.Backfill answerWithValueReplaced(String url, String id, String from, String to)
      throws Exception {
    String query = "{\"query\": \"query($id: ID!) { backfill(id: $id) "
        + "{ id status createdAt counts { total } } }\", \"variables\": {\"id\": \"" + id + "\"}}";
    HttpRequest request = HttpRequest.newBuilder(URI.create(url + "/graphql/v1"))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(query))
        .build();
    String body = HttpClient.newHttpClient().send(request, HttpResponse.BodyHandlers.ofString()).body();
    String replaced = body.replace("\"" + from + "\"", "\"" + to + "\"");
    return BackfillerClient.MAPPER.treeToValue(
        BackfillerClient.MAPPER.readTree(replaced).path("data").path("backfill"), Model.Backfill.class);
  }

  private static String refusedCode(Runnable call) {
    try {
      call.run();
      return "not refused";
    } catch (UserErrorsException e) {
      return e.errors().get(0).knownCode() + " " + e.errors().get(0).field();
    }
  }

  public static void main(String[] args) throws Exception {
    BackfillerClient client = new BackfillerClient(System.getenv("BACKFILLER_URL"), null);

    // @oneOf inputs: exactly one field is sent; two is refused before sending.
    String sent = BackfillerClient.inputJson(
        BackfillerClient.launchInput(BackfillerClient.job("daily_sales"), BackfillerClient.keys("k")))
        .toString();
    check("oneOf sends one field", sent.contains("\"partitions\":{\"keys\":[\"k\"]}")
        && sent.contains("\"target\":{\"job\":\"daily_sales\"}"), sent);
    Types.PartitionSelectionInput both = BackfillerClient.all();
    both.setKeys(List.of("k"));
    boolean refusedLocally;
    try {
      BackfillerClient.inputJson(BackfillerClient.launchInput(BackfillerClient.job("x"), both));
      refusedLocally = false;
    } catch (IllegalArgumentException e) {
      refusedLocally = true;
    }
    check("oneOf with two fields is refused", refusedLocally, both);
    Types.PartitionSelectionInput fromMap = new Types.PartitionSelectionInput(Map.of("all", true));
    String mapped = BackfillerClient.inputJson(
        BackfillerClient.launchInput(BackfillerClient.job("x"), fromMap)).toString();
    check("oneOf drops the empty objects the generated classes build", mapped.contains("\"partitions\":{\"all\":true}"), mapped);

    Model.Preview preview = client.preview(
        BackfillerClient.launchInput(BackfillerClient.job("daily_sales"), BackfillerClient.range("2024-01-01", "2024-01-10")));
    check("preview", preview.runs() == 10, preview);

    Types.LaunchBackfillInput withConfig =
        BackfillerClient.launchInput(BackfillerClient.job("region_report"), BackfillerClient.all());
    withConfig.setRunConfig(Map.of("currency", "EUR"));
    Model.Backfill all = client.launch(withConfig);
    check("launch all", all.counts().total() == 3, all);
    check("JSON run config read back", "EUR".equals(all.runConfig().path("currency").asText()), all.runConfig());
    check("DateTime is a time", Duration.between(all.createdAt(), OffsetDateTime.now()).abs().toHours() < 1, all.createdAt());

    Model.Backfill keys = client.launch(BackfillerClient.launchInput(
        BackfillerClient.job("daily_sales"), BackfillerClient.keys("2024-03-01", "2024-03-05")));
    check("launch keys", keys.counts().total() == 2, keys);
    Model.Backfill ranged = client.launch(BackfillerClient.launchInput(
        BackfillerClient.job("daily_sales"), BackfillerClient.range("2024-02-01", "2024-02-29")));
    check("launch range", ranged.counts().total() == 29, ranged);

    Model.Backfill read = client.get(ranged.id());
    check("read with counts", read.counts().total() == 29 && read.counts().pending() == 29, read.counts());

    // An enum value added to the schema later reads as null instead of failing the decoding:
    // the real server's answer, with one enum value replaced as a later server may send it.
    Model.Backfill future = answerWithValueReplaced(
        System.getenv("BACKFILLER_URL"), ranged.id(), "REQUESTED", "SOMETHING_NEW");
    check("unknown enum value tolerated",
        future.status() == null && future.counts().total() == 29 && future.createdAt() != null, future);

    Set<String> seen = new HashSet<>();
    String after = null;
    int pages = 0;
    while (true) {
      Model.Page page = client.list(2, after);
      pages++;
      page.nodes().forEach(b -> seen.add(b.id()));
      if (!page.pageInfo().hasNextPage()) {
        break;
      }
      after = page.pageInfo().endCursor();
    }
    check("list with paging", pages >= 2 && seen.containsAll(List.of(all.id(), keys.id(), ranged.id())), seen);

    Model.Backfill paused = client.pause(ranged.id());
    check("pause", paused.status() == Types.BackfillStatus.PAUSED, paused.status());
    Model.Backfill resumed = client.resume(ranged.id());
    check("resume", resumed.status() != Types.BackfillStatus.PAUSED, resumed.status());
    Model.Backfill canceled = client.cancel(ranged.id());
    check("cancel", canceled.status() == Types.BackfillStatus.CANCELED
        || canceled.status() == Types.BackfillStatus.CANCELING, canceled.status());
    for (long end = System.nanoTime() + 60_000_000_000L; System.nanoTime() < end; Thread.sleep(200)) {
      if (client.get(ranged.id()).status() == Types.BackfillStatus.CANCELED) {
        break;
      }
    }
    Model.Backfill retried = client.retry(ranged.id(),
        List.of(Types.RetryInclude.CANCELED, Types.RetryInclude.NOT_RUN));
    check("retry", retried.parent() != null && ranged.id().equals(retried.parent().id()), retried);

    String unknownJob = refusedCode(() -> client.launch(
        BackfillerClient.launchInput(BackfillerClient.job("no_such_job"), BackfillerClient.all())));
    check("userErrors are typed", unknownJob.startsWith("JOB_NOT_FOUND"), unknownJob);
    String badRange = refusedCode(() -> client.launch(BackfillerClient.launchInput(
        BackfillerClient.job("daily_sales"), BackfillerClient.range("2024-01-10", "2024-01-01"))));
    check("userErrors carry the field", badRange.contains("["), badRange);

    Model.Backfill updated = client.update(keys.id(),
        new BackfillerClient.Changes().maxConcurrentRuns(2).priority(7).title("java client, updated"));
    check("update", Integer.valueOf(2).equals(updated.maxConcurrentRuns()) && updated.priority() == 7
        && "java client, updated".equals(updated.title()), updated);
    Model.Backfill reread = client.get(keys.id());
    check("update read back", Integer.valueOf(2).equals(reread.maxConcurrentRuns())
        && reread.priority() == 7 && "java client, updated".equals(reread.title()), reread);
    Model.Backfill untitled = client.update(keys.id(), new BackfillerClient.Changes().title(null));
    check("update removes a title, keeps the rest", untitled.title() == null
        && Integer.valueOf(2).equals(untitled.maxConcurrentRuns()), untitled);
    String zeroLimit = refusedCode(
        () -> client.update(keys.id(), new BackfillerClient.Changes().maxConcurrentRuns(0)));
    check("update refuses a limit of 0", zeroLimit.startsWith("INVALID_ARGUMENT"), zeroLimit);

    int marked = client.markPartitions(BackfillerClient.job("daily_sales"),
        BackfillerClient.keys("2025-06-03"), Types.PartitionMarkStatus.SKIPPED,
        "java client: a known-bad day");
    check("mark a partition skipped", marked == 1, marked);
    String blankReason = refusedCode(() -> client.markPartitions(BackfillerClient.job("daily_sales"),
        BackfillerClient.keys("2025-06-03"), Types.PartitionMarkStatus.SKIPPED, " "));
    check("mark refuses a blank reason", blankReason.startsWith("INVALID_ARGUMENT"), blankReason);

    BackfillerClient secured =
        new BackfillerClient(System.getenv("BACKFILLER_AUTH_URL"), System.getenv("BACKFILLER_TOKEN"));
    Model.Backfill withToken = secured.launch(BackfillerClient.launchInput(
        BackfillerClient.job("daily_sales"), BackfillerClient.keys("2024-04-01")));
    check("a token", "java-operator".equals(withToken.creator()), withToken.creator());
    int status;
    try {
      new BackfillerClient(System.getenv("BACKFILLER_AUTH_URL"), null).launch(
          BackfillerClient.launchInput(BackfillerClient.job("daily_sales"), BackfillerClient.all()));
      status = 200;
    } catch (TransportException e) {
      status = e.status();
    }
    check("no token is refused", status == 401, status);
  }
}
