package dev.backfiller.client.generated;

import java.util.HashMap;
import java.util.Map;
import java.util.List;
import java.util.stream.Collectors;

public class Types {
  
  
  
  /** What a token may do. Each role may do all that the one before may. */
  public enum ApiTokenRole {
    ADMIN,
    OPERATOR,
    VIEWER
    
  }
  
  public static class AssetLatestStatusesArgs {
    private String after;
    private Integer first;
  
    public AssetLatestStatusesArgs(Map<String, Object> args) {
      if (args != null) {
        this.after = (String) args.get("after");
        this.first = (Integer) args.get("first");
      }
    }
  
    public String getAfter() { return this.after; }
    public Integer getFirst() { return this.first; }
    public void setAfter(String after) { this.after = after; }
    public void setFirst(Integer first) { this.first = first; }
  }
  
  
  
  public static class AssetSelectionInput {
    private Boolean downstream;
    private Iterable<String> names;
    private Boolean upstream;
  
    public AssetSelectionInput(Map<String, Object> args) {
      if (args != null) {
        this.downstream = (Boolean) args.get("downstream");
        this.names = (Iterable<String>) args.get("names");
        this.upstream = (Boolean) args.get("upstream");
      }
    }
  
    public Boolean getDownstream() { return this.downstream; }
    public Iterable<String> getNames() { return this.names; }
    public Boolean getUpstream() { return this.upstream; }
    public void setDownstream(Boolean downstream) { this.downstream = downstream; }
    public void setNames(Iterable<String> names) { this.names = names; }
    public void setUpstream(Boolean upstream) { this.upstream = upstream; }
  }
  
  
  
  /** How a mutation ended. */
  public enum AuditOutcome {
    DENIED,
    FAILED,
    REJECTED,
    SUCCEEDED
    
  }
  
  public static class BackfillEventsArgs {
    private String after;
    private Integer first;
    private Boolean newestFirst;
  
    public BackfillEventsArgs(Map<String, Object> args) {
      if (args != null) {
        this.after = (String) args.get("after");
        this.first = (Integer) args.get("first");
        this.newestFirst = (Boolean) args.get("newestFirst");
      }
    }
  
    public String getAfter() { return this.after; }
    public Integer getFirst() { return this.first; }
    public Boolean getNewestFirst() { return this.newestFirst; }
    public void setAfter(String after) { this.after = after; }
    public void setFirst(Integer first) { this.first = first; }
    public void setNewestFirst(Boolean newestFirst) { this.newestFirst = newestFirst; }
  }
  public static class BackfillNotificationsArgs {
    private String after;
    private Integer first;
  
    public BackfillNotificationsArgs(Map<String, Object> args) {
      if (args != null) {
        this.after = (String) args.get("after");
        this.first = (Integer) args.get("first");
      }
    }
  
    public String getAfter() { return this.after; }
    public Integer getFirst() { return this.first; }
    public void setAfter(String after) { this.after = after; }
    public void setFirst(Integer first) { this.first = first; }
  }
  public static class BackfillPartitionsArgs {
    private String after;
    private Integer first;
    private Iterable<PartitionStatus> statuses;
  
    public BackfillPartitionsArgs(Map<String, Object> args) {
      if (args != null) {
        this.after = (String) args.get("after");
        this.first = (Integer) args.get("first");
        if (args.get("statuses") != null) {
        		this.statuses = ((List<Object>) args.get("statuses")).stream()
        				.map(item -> item instanceof PartitionStatus ? item : PartitionStatus.valueOf((String) item))
        				.map(PartitionStatus.class::cast)
        				.collect(Collectors.toList());
        }
      }
    }
  
    public String getAfter() { return this.after; }
    public Integer getFirst() { return this.first; }
    public Iterable<PartitionStatus> getStatuses() { return this.statuses; }
    public void setAfter(String after) { this.after = after; }
    public void setFirst(Integer first) { this.first = first; }
    public void setStatuses(Iterable<PartitionStatus> statuses) { this.statuses = statuses; }
  }
  public static class BackfillRunsArgs {
    private String after;
    private Integer first;
    private Iterable<RunStatus> statuses;
  
    public BackfillRunsArgs(Map<String, Object> args) {
      if (args != null) {
        this.after = (String) args.get("after");
        this.first = (Integer) args.get("first");
        if (args.get("statuses") != null) {
        		this.statuses = ((List<Object>) args.get("statuses")).stream()
        				.map(item -> item instanceof RunStatus ? item : RunStatus.valueOf((String) item))
        				.map(RunStatus.class::cast)
        				.collect(Collectors.toList());
        }
      }
    }
  
    public String getAfter() { return this.after; }
    public Integer getFirst() { return this.first; }
    public Iterable<RunStatus> getStatuses() { return this.statuses; }
    public void setAfter(String after) { this.after = after; }
    public void setFirst(Integer first) { this.first = first; }
    public void setStatuses(Iterable<RunStatus> statuses) { this.statuses = statuses; }
  }
  public static class BackfillTimelineArgs {
    private Integer lastRuns;
  
    public BackfillTimelineArgs(Map<String, Object> args) {
      if (args != null) {
        this.lastRuns = (Integer) args.get("lastRuns");
      }
    }
  
    public Integer getLastRuns() { return this.lastRuns; }
    public void setLastRuns(Integer lastRuns) { this.lastRuns = lastRuns; }
  }
  
  
  
  
  
  
  
  /** Something that happened to a backfill. */
  public enum BackfillEventKind {
    CANCELED,
    CANCEL_REQUESTED,
    COMPLETED,
    FAILED,
    LAUNCHED,
    PAUSED,
    RESUMED,
    RETRIED,
    RUN_FAILED,
    STARTED,
    UPDATED
    
  }
  
  public static class BackfillFilterInput {
    private String asset;
    private java.time.OffsetDateTime createdAfter;
    private java.time.OffsetDateTime createdBefore;
    private String creator;
    private String job;
    private String search;
    private Iterable<BackfillStatus> statuses;
    private TagInput tag;
    private Iterable<TagInput> tags;
    private String team;
  
    public BackfillFilterInput(Map<String, Object> args) {
      if (args != null) {
        this.asset = (String) args.get("asset");
        this.createdAfter = (java.time.OffsetDateTime) args.get("createdAfter");
        this.createdBefore = (java.time.OffsetDateTime) args.get("createdBefore");
        this.creator = (String) args.get("creator");
        this.job = (String) args.get("job");
        this.search = (String) args.get("search");
        if (args.get("statuses") != null) {
        		this.statuses = ((List<Object>) args.get("statuses")).stream()
        				.map(item -> item instanceof BackfillStatus ? item : BackfillStatus.valueOf((String) item))
        				.map(BackfillStatus.class::cast)
        				.collect(Collectors.toList());
        }
        this.tag = new TagInput((Map<String, Object>) args.get("tag"));
        if (args.get("tags") != null) {
        		this.tags = (Iterable<TagInput>) args.get("tags");
        }
        this.team = (String) args.get("team");
      }
    }
  
    public String getAsset() { return this.asset; }
    public java.time.OffsetDateTime getCreatedAfter() { return this.createdAfter; }
    public java.time.OffsetDateTime getCreatedBefore() { return this.createdBefore; }
    public String getCreator() { return this.creator; }
    public String getJob() { return this.job; }
    public String getSearch() { return this.search; }
    public Iterable<BackfillStatus> getStatuses() { return this.statuses; }
    public TagInput getTag() { return this.tag; }
    public Iterable<TagInput> getTags() { return this.tags; }
    public String getTeam() { return this.team; }
    public void setAsset(String asset) { this.asset = asset; }
    public void setCreatedAfter(java.time.OffsetDateTime createdAfter) { this.createdAfter = createdAfter; }
    public void setCreatedBefore(java.time.OffsetDateTime createdBefore) { this.createdBefore = createdBefore; }
    public void setCreator(String creator) { this.creator = creator; }
    public void setJob(String job) { this.job = job; }
    public void setSearch(String search) { this.search = search; }
    public void setStatuses(Iterable<BackfillStatus> statuses) { this.statuses = statuses; }
    public void setTag(TagInput tag) { this.tag = tag; }
    public void setTags(Iterable<TagInput> tags) { this.tags = tags; }
    public void setTeam(String team) { this.team = team; }
  }
  /** In which order partitions are launched. */
  public enum BackfillOrder {
    NEWEST_FIRST,
    OLDEST_FIRST
    
  }
  
  
  
  
  
  
  
  /** Where a backfill is in its life. */
  public enum BackfillStatus {
    CANCELED,
    CANCELING,
    COMPLETED_FAILED,
    COMPLETED_SUCCESS,
    FAILED,
    PAUSED,
    REQUESTED,
    RUNNING
    
  }
  
  
  public static class BackfillTargetInput {
    private AssetSelectionInput assets;
    private String job;
  
    public BackfillTargetInput(Map<String, Object> args) {
      if (args != null) {
        this.assets = new AssetSelectionInput((Map<String, Object>) args.get("assets"));
        this.job = (String) args.get("job");
      }
    }
  
    public AssetSelectionInput getAssets() { return this.assets; }
    public String getJob() { return this.job; }
    public void setAssets(AssetSelectionInput assets) { this.assets = assets; }
    public void setJob(String job) { this.job = job; }
  }
  
  public static class CancelBackfillInput {
    private Object id;
  
    public CancelBackfillInput(Map<String, Object> args) {
      if (args != null) {
        this.id = (Object) args.get("id");
      }
    }
  
    public Object getId() { return this.id; }
    public void setId(Object id) { this.id = id; }
  }
  
  public static class CreateApiTokenInput {
    private java.time.OffsetDateTime expiresAt;
    private Iterable<String> jobs;
    private String name;
    private ApiTokenRole role;
    private String team;
  
    public CreateApiTokenInput(Map<String, Object> args) {
      if (args != null) {
        this.expiresAt = (java.time.OffsetDateTime) args.get("expiresAt");
        this.jobs = (Iterable<String>) args.get("jobs");
        this.name = (String) args.get("name");
        if (args.get("role") instanceof ApiTokenRole) {
          this.role = (ApiTokenRole) args.get("role");
        } else if (args.get("role") != null) {
          this.role = ApiTokenRole.valueOf((String) args.get("role"));
        }
        this.team = (String) args.get("team");
      }
    }
  
    public java.time.OffsetDateTime getExpiresAt() { return this.expiresAt; }
    public Iterable<String> getJobs() { return this.jobs; }
    public String getName() { return this.name; }
    public ApiTokenRole getRole() { return this.role; }
    public String getTeam() { return this.team; }
    public void setExpiresAt(java.time.OffsetDateTime expiresAt) { this.expiresAt = expiresAt; }
    public void setJobs(Iterable<String> jobs) { this.jobs = jobs; }
    public void setName(String name) { this.name = name; }
    public void setRole(ApiTokenRole role) { this.role = role; }
    public void setTeam(String team) { this.team = team; }
  }
  
  public static class DynamicPartitionsInput {
    private Iterable<String> keys;
    private String name;
  
    public DynamicPartitionsInput(Map<String, Object> args) {
      if (args != null) {
        this.keys = (Iterable<String>) args.get("keys");
        this.name = (String) args.get("name");
      }
    }
  
    public Iterable<String> getKeys() { return this.keys; }
    public String getName() { return this.name; }
    public void setKeys(Iterable<String> keys) { this.keys = keys; }
    public void setName(String name) { this.name = name; }
  }
  
  public static class EvaluateTriggerInput {
    private Boolean dryRun;
    private String name;
  
    public EvaluateTriggerInput(Map<String, Object> args) {
      if (args != null) {
        this.dryRun = (Boolean) args.get("dryRun");
        this.name = (String) args.get("name");
      }
    }
  
    public Boolean getDryRun() { return this.dryRun; }
    public String getName() { return this.name; }
    public void setDryRun(Boolean dryRun) { this.dryRun = dryRun; }
    public void setName(String name) { this.name = name; }
  }
  
  
  public static class LaunchBackfillInput {
    private String description;
    private String idempotencyKey;
    private Integer maxConcurrentRuns;
    private Iterable<NotifyInput> notify;
    private BackfillOrder order;
    private PartitionSelectionInput partitions;
    private Integer priority;
    private Reprocess reprocess;
    private Object runConfig;
    private Iterable<TagInput> tags;
    private BackfillTargetInput target;
    private String title;
  
    public LaunchBackfillInput(Map<String, Object> args) {
      if (args != null) {
        this.description = (String) args.get("description");
        this.idempotencyKey = (String) args.get("idempotencyKey");
        this.maxConcurrentRuns = (Integer) args.get("maxConcurrentRuns");
        if (args.get("notify") != null) {
        		this.notify = (Iterable<NotifyInput>) args.get("notify");
        }
        if (args.get("order") instanceof BackfillOrder) {
          this.order = (BackfillOrder) args.get("order");
        } else if (args.get("order") != null) {
          this.order = BackfillOrder.valueOf((String) args.get("order"));
        }
        this.partitions = new PartitionSelectionInput((Map<String, Object>) args.get("partitions"));
        this.priority = (Integer) args.get("priority");
        if (args.get("reprocess") instanceof Reprocess) {
          this.reprocess = (Reprocess) args.get("reprocess");
        } else if (args.get("reprocess") != null) {
          this.reprocess = Reprocess.valueOf((String) args.get("reprocess"));
        }
        this.runConfig = (Object) args.get("runConfig");
        if (args.get("tags") != null) {
        		this.tags = (Iterable<TagInput>) args.get("tags");
        }
        this.target = new BackfillTargetInput((Map<String, Object>) args.get("target"));
        this.title = (String) args.get("title");
      }
    }
  
    public String getDescription() { return this.description; }
    public String getIdempotencyKey() { return this.idempotencyKey; }
    public Integer getMaxConcurrentRuns() { return this.maxConcurrentRuns; }
    public Iterable<NotifyInput> getNotify() { return this.notify; }
    public BackfillOrder getOrder() { return this.order; }
    public PartitionSelectionInput getPartitions() { return this.partitions; }
    public Integer getPriority() { return this.priority; }
    public Reprocess getReprocess() { return this.reprocess; }
    public Object getRunConfig() { return this.runConfig; }
    public Iterable<TagInput> getTags() { return this.tags; }
    public BackfillTargetInput getTarget() { return this.target; }
    public String getTitle() { return this.title; }
    public void setDescription(String description) { this.description = description; }
    public void setIdempotencyKey(String idempotencyKey) { this.idempotencyKey = idempotencyKey; }
    public void setMaxConcurrentRuns(Integer maxConcurrentRuns) { this.maxConcurrentRuns = maxConcurrentRuns; }
    public void setNotify(Iterable<NotifyInput> notify) { this.notify = notify; }
    public void setOrder(BackfillOrder order) { this.order = order; }
    public void setPartitions(PartitionSelectionInput partitions) { this.partitions = partitions; }
    public void setPriority(Integer priority) { this.priority = priority; }
    public void setReprocess(Reprocess reprocess) { this.reprocess = reprocess; }
    public void setRunConfig(Object runConfig) { this.runConfig = runConfig; }
    public void setTags(Iterable<TagInput> tags) { this.tags = tags; }
    public void setTarget(BackfillTargetInput target) { this.target = target; }
    public void setTitle(String title) { this.title = title; }
  }
  
  public static class MarkPartitionsInput {
    private PartitionSelectionInput partitions;
    private String reason;
    private PartitionMarkStatus status;
    private BackfillTargetInput target;
  
    public MarkPartitionsInput(Map<String, Object> args) {
      if (args != null) {
        this.partitions = new PartitionSelectionInput((Map<String, Object>) args.get("partitions"));
        this.reason = (String) args.get("reason");
        if (args.get("status") instanceof PartitionMarkStatus) {
          this.status = (PartitionMarkStatus) args.get("status");
        } else if (args.get("status") != null) {
          this.status = PartitionMarkStatus.valueOf((String) args.get("status"));
        }
        this.target = new BackfillTargetInput((Map<String, Object>) args.get("target"));
      }
    }
  
    public PartitionSelectionInput getPartitions() { return this.partitions; }
    public String getReason() { return this.reason; }
    public PartitionMarkStatus getStatus() { return this.status; }
    public BackfillTargetInput getTarget() { return this.target; }
    public void setPartitions(PartitionSelectionInput partitions) { this.partitions = partitions; }
    public void setReason(String reason) { this.reason = reason; }
    public void setStatus(PartitionMarkStatus status) { this.status = status; }
    public void setTarget(BackfillTargetInput target) { this.target = target; }
  }
  
  public static class MutationAddDynamicPartitionsArgs {
    private DynamicPartitionsInput input;
  
    public MutationAddDynamicPartitionsArgs(Map<String, Object> args) {
      if (args != null) {
        this.input = new DynamicPartitionsInput((Map<String, Object>) args.get("input"));
      }
    }
  
    public DynamicPartitionsInput getInput() { return this.input; }
    public void setInput(DynamicPartitionsInput input) { this.input = input; }
  }
  public static class MutationCancelBackfillArgs {
    private CancelBackfillInput input;
  
    public MutationCancelBackfillArgs(Map<String, Object> args) {
      if (args != null) {
        this.input = new CancelBackfillInput((Map<String, Object>) args.get("input"));
      }
    }
  
    public CancelBackfillInput getInput() { return this.input; }
    public void setInput(CancelBackfillInput input) { this.input = input; }
  }
  public static class MutationCreateApiTokenArgs {
    private CreateApiTokenInput input;
  
    public MutationCreateApiTokenArgs(Map<String, Object> args) {
      if (args != null) {
        this.input = new CreateApiTokenInput((Map<String, Object>) args.get("input"));
      }
    }
  
    public CreateApiTokenInput getInput() { return this.input; }
    public void setInput(CreateApiTokenInput input) { this.input = input; }
  }
  public static class MutationDeleteDynamicPartitionsArgs {
    private DynamicPartitionsInput input;
  
    public MutationDeleteDynamicPartitionsArgs(Map<String, Object> args) {
      if (args != null) {
        this.input = new DynamicPartitionsInput((Map<String, Object>) args.get("input"));
      }
    }
  
    public DynamicPartitionsInput getInput() { return this.input; }
    public void setInput(DynamicPartitionsInput input) { this.input = input; }
  }
  public static class MutationEvaluateTriggerArgs {
    private EvaluateTriggerInput input;
  
    public MutationEvaluateTriggerArgs(Map<String, Object> args) {
      if (args != null) {
        this.input = new EvaluateTriggerInput((Map<String, Object>) args.get("input"));
      }
    }
  
    public EvaluateTriggerInput getInput() { return this.input; }
    public void setInput(EvaluateTriggerInput input) { this.input = input; }
  }
  public static class MutationLaunchBackfillArgs {
    private LaunchBackfillInput input;
  
    public MutationLaunchBackfillArgs(Map<String, Object> args) {
      if (args != null) {
        this.input = new LaunchBackfillInput((Map<String, Object>) args.get("input"));
      }
    }
  
    public LaunchBackfillInput getInput() { return this.input; }
    public void setInput(LaunchBackfillInput input) { this.input = input; }
  }
  public static class MutationMarkPartitionsArgs {
    private MarkPartitionsInput input;
  
    public MutationMarkPartitionsArgs(Map<String, Object> args) {
      if (args != null) {
        this.input = new MarkPartitionsInput((Map<String, Object>) args.get("input"));
      }
    }
  
    public MarkPartitionsInput getInput() { return this.input; }
    public void setInput(MarkPartitionsInput input) { this.input = input; }
  }
  public static class MutationPauseBackfillArgs {
    private PauseBackfillInput input;
  
    public MutationPauseBackfillArgs(Map<String, Object> args) {
      if (args != null) {
        this.input = new PauseBackfillInput((Map<String, Object>) args.get("input"));
      }
    }
  
    public PauseBackfillInput getInput() { return this.input; }
    public void setInput(PauseBackfillInput input) { this.input = input; }
  }
  public static class MutationPreviewBackfillArgs {
    private LaunchBackfillInput input;
  
    public MutationPreviewBackfillArgs(Map<String, Object> args) {
      if (args != null) {
        this.input = new LaunchBackfillInput((Map<String, Object>) args.get("input"));
      }
    }
  
    public LaunchBackfillInput getInput() { return this.input; }
    public void setInput(LaunchBackfillInput input) { this.input = input; }
  }
  public static class MutationResumeBackfillArgs {
    private ResumeBackfillInput input;
  
    public MutationResumeBackfillArgs(Map<String, Object> args) {
      if (args != null) {
        this.input = new ResumeBackfillInput((Map<String, Object>) args.get("input"));
      }
    }
  
    public ResumeBackfillInput getInput() { return this.input; }
    public void setInput(ResumeBackfillInput input) { this.input = input; }
  }
  public static class MutationRetryBackfillArgs {
    private RetryBackfillInput input;
  
    public MutationRetryBackfillArgs(Map<String, Object> args) {
      if (args != null) {
        this.input = new RetryBackfillInput((Map<String, Object>) args.get("input"));
      }
    }
  
    public RetryBackfillInput getInput() { return this.input; }
    public void setInput(RetryBackfillInput input) { this.input = input; }
  }
  public static class MutationRevokeApiTokenArgs {
    private RevokeApiTokenInput input;
  
    public MutationRevokeApiTokenArgs(Map<String, Object> args) {
      if (args != null) {
        this.input = new RevokeApiTokenInput((Map<String, Object>) args.get("input"));
      }
    }
  
    public RevokeApiTokenInput getInput() { return this.input; }
    public void setInput(RevokeApiTokenInput input) { this.input = input; }
  }
  public static class MutationSetTeamLimitArgs {
    private SetTeamLimitInput input;
  
    public MutationSetTeamLimitArgs(Map<String, Object> args) {
      if (args != null) {
        this.input = new SetTeamLimitInput((Map<String, Object>) args.get("input"));
      }
    }
  
    public SetTeamLimitInput getInput() { return this.input; }
    public void setInput(SetTeamLimitInput input) { this.input = input; }
  }
  public static class MutationSetTriggerEnabledArgs {
    private SetTriggerEnabledInput input;
  
    public MutationSetTriggerEnabledArgs(Map<String, Object> args) {
      if (args != null) {
        this.input = new SetTriggerEnabledInput((Map<String, Object>) args.get("input"));
      }
    }
  
    public SetTriggerEnabledInput getInput() { return this.input; }
    public void setInput(SetTriggerEnabledInput input) { this.input = input; }
  }
  public static class MutationUpdateApiTokenArgs {
    private UpdateApiTokenInput input;
  
    public MutationUpdateApiTokenArgs(Map<String, Object> args) {
      if (args != null) {
        this.input = new UpdateApiTokenInput((Map<String, Object>) args.get("input"));
      }
    }
  
    public UpdateApiTokenInput getInput() { return this.input; }
    public void setInput(UpdateApiTokenInput input) { this.input = input; }
  }
  public static class MutationUpdateBackfillArgs {
    private UpdateBackfillInput input;
  
    public MutationUpdateBackfillArgs(Map<String, Object> args) {
      if (args != null) {
        this.input = new UpdateBackfillInput((Map<String, Object>) args.get("input"));
      }
    }
  
    public UpdateBackfillInput getInput() { return this.input; }
    public void setInput(UpdateBackfillInput input) { this.input = input; }
  }
  
  
  
  
  /** A backfill lifecycle event a webhook can be told about. */
  public enum NotificationEvent {
    CANCELED,
    COMPLETED_FAILED,
    COMPLETED_SUCCESS,
    FAILED,
    LAUNCHED,
    PAUSED,
    RUN_FAILED
    
  }
  
  /** The body of a webhook delivery. */
  public enum NotificationFormat {
    GENERIC,
    SLACK
    
  }
  
  /** Where the delivery of a notification stands. */
  public enum NotificationStatus {
    DELIVERED,
    FAILED,
    PENDING
    
  }
  
  public static class NotifyInput {
    private Iterable<NotificationEvent> events;
    private NotificationFormat format;
    private String url;
  
    public NotifyInput(Map<String, Object> args) {
      if (args != null) {
        if (args.get("events") != null) {
        		this.events = ((List<Object>) args.get("events")).stream()
        				.map(item -> item instanceof NotificationEvent ? item : NotificationEvent.valueOf((String) item))
        				.map(NotificationEvent.class::cast)
        				.collect(Collectors.toList());
        }
        if (args.get("format") instanceof NotificationFormat) {
          this.format = (NotificationFormat) args.get("format");
        } else if (args.get("format") != null) {
          this.format = NotificationFormat.valueOf((String) args.get("format"));
        }
        this.url = (String) args.get("url");
      }
    }
  
    public Iterable<NotificationEvent> getEvents() { return this.events; }
    public NotificationFormat getFormat() { return this.format; }
    public String getUrl() { return this.url; }
    public void setEvents(Iterable<NotificationEvent> events) { this.events = events; }
    public void setFormat(NotificationFormat format) { this.format = format; }
    public void setUrl(String url) { this.url = url; }
  }
  
  
  
  
  /** What `markPartitions` records of a partition, without running it. */
  public enum PartitionMarkStatus {
    SKIPPED,
    SUCCEEDED
    
  }
  
  
  public static class PartitionRangeInput {
    private String end;
    private String start;
  
    public PartitionRangeInput(Map<String, Object> args) {
      if (args != null) {
        this.end = (String) args.get("end");
        this.start = (String) args.get("start");
      }
    }
  
    public String getEnd() { return this.end; }
    public String getStart() { return this.start; }
    public void setEnd(String end) { this.end = end; }
    public void setStart(String start) { this.start = start; }
  }
  
  public static class PartitionSelectionInput {
    private Boolean all;
    private Iterable<String> keys;
    private PartitionRangeInput range;
  
    public PartitionSelectionInput(Map<String, Object> args) {
      if (args != null) {
        this.all = (Boolean) args.get("all");
        this.keys = (Iterable<String>) args.get("keys");
        this.range = new PartitionRangeInput((Map<String, Object>) args.get("range"));
      }
    }
  
    public Boolean getAll() { return this.all; }
    public Iterable<String> getKeys() { return this.keys; }
    public PartitionRangeInput getRange() { return this.range; }
    public void setAll(Boolean all) { this.all = all; }
    public void setKeys(Iterable<String> keys) { this.keys = keys; }
    public void setRange(PartitionRangeInput range) { this.range = range; }
  }
  /** The status of one partition inside one backfill. */
  public enum PartitionStatus {
    CANCELED,
    FAILED,
    PENDING,
    QUEUED,
    RUNNING,
    SKIPPED,
    SUCCEEDED
    
  }
  
  
  
  public static class PartitionsDefinitionKeysArgs {
    private String after;
    private Integer first;
  
    public PartitionsDefinitionKeysArgs(Map<String, Object> args) {
      if (args != null) {
        this.after = (String) args.get("after");
        this.first = (Integer) args.get("first");
      }
    }
  
    public String getAfter() { return this.after; }
    public Integer getFirst() { return this.first; }
    public void setAfter(String after) { this.after = after; }
    public void setFirst(Integer first) { this.first = first; }
  }
  /** The kind of a partitions definition. */
  public enum PartitionsKind {
    DYNAMIC,
    STATIC,
    TIME
    
  }
  
  public static class PauseBackfillInput {
    private Object id;
  
    public PauseBackfillInput(Map<String, Object> args) {
      if (args != null) {
        this.id = (Object) args.get("id");
      }
    }
  
    public Object getId() { return this.id; }
    public void setId(Object id) { this.id = id; }
  }
  
  
  public static class QueryApiTokensArgs {
    private String after;
    private Integer first;
    private Boolean includeRevoked;
  
    public QueryApiTokensArgs(Map<String, Object> args) {
      if (args != null) {
        this.after = (String) args.get("after");
        this.first = (Integer) args.get("first");
        this.includeRevoked = (Boolean) args.get("includeRevoked");
      }
    }
  
    public String getAfter() { return this.after; }
    public Integer getFirst() { return this.first; }
    public Boolean getIncludeRevoked() { return this.includeRevoked; }
    public void setAfter(String after) { this.after = after; }
    public void setFirst(Integer first) { this.first = first; }
    public void setIncludeRevoked(Boolean includeRevoked) { this.includeRevoked = includeRevoked; }
  }
  public static class QueryAssetArgs {
    private String name;
  
    public QueryAssetArgs(Map<String, Object> args) {
      if (args != null) {
        this.name = (String) args.get("name");
      }
    }
  
    public String getName() { return this.name; }
    public void setName(String name) { this.name = name; }
  }
  public static class QueryAuditLogArgs {
    private String actor;
    private String after;
    private Integer first;
    private String operation;
  
    public QueryAuditLogArgs(Map<String, Object> args) {
      if (args != null) {
        this.actor = (String) args.get("actor");
        this.after = (String) args.get("after");
        this.first = (Integer) args.get("first");
        this.operation = (String) args.get("operation");
      }
    }
  
    public String getActor() { return this.actor; }
    public String getAfter() { return this.after; }
    public Integer getFirst() { return this.first; }
    public String getOperation() { return this.operation; }
    public void setActor(String actor) { this.actor = actor; }
    public void setAfter(String after) { this.after = after; }
    public void setFirst(Integer first) { this.first = first; }
    public void setOperation(String operation) { this.operation = operation; }
  }
  public static class QueryBackfillArgs {
    private Object id;
  
    public QueryBackfillArgs(Map<String, Object> args) {
      if (args != null) {
        this.id = (Object) args.get("id");
      }
    }
  
    public Object getId() { return this.id; }
    public void setId(Object id) { this.id = id; }
  }
  public static class QueryBackfillsArgs {
    private String after;
    private BackfillFilterInput filter;
    private Integer first;
  
    public QueryBackfillsArgs(Map<String, Object> args) {
      if (args != null) {
        this.after = (String) args.get("after");
        this.filter = new BackfillFilterInput((Map<String, Object>) args.get("filter"));
        this.first = (Integer) args.get("first");
      }
    }
  
    public String getAfter() { return this.after; }
    public BackfillFilterInput getFilter() { return this.filter; }
    public Integer getFirst() { return this.first; }
    public void setAfter(String after) { this.after = after; }
    public void setFilter(BackfillFilterInput filter) { this.filter = filter; }
    public void setFirst(Integer first) { this.first = first; }
  }
  public static class QueryJobArgs {
    private String name;
  
    public QueryJobArgs(Map<String, Object> args) {
      if (args != null) {
        this.name = (String) args.get("name");
      }
    }
  
    public String getName() { return this.name; }
    public void setName(String name) { this.name = name; }
  }
  public static class QueryNodeArgs {
    private Object id;
  
    public QueryNodeArgs(Map<String, Object> args) {
      if (args != null) {
        this.id = (Object) args.get("id");
      }
    }
  
    public Object getId() { return this.id; }
    public void setId(Object id) { this.id = id; }
  }
  public static class QueryPartitionMarksArgs {
    private Object before;
    private Integer first;
    private String job;
    private String partitionKey;
  
    public QueryPartitionMarksArgs(Map<String, Object> args) {
      if (args != null) {
        this.before = (Object) args.get("before");
        this.first = (Integer) args.get("first");
        this.job = (String) args.get("job");
        this.partitionKey = (String) args.get("partitionKey");
      }
    }
  
    public Object getBefore() { return this.before; }
    public Integer getFirst() { return this.first; }
    public String getJob() { return this.job; }
    public String getPartitionKey() { return this.partitionKey; }
    public void setBefore(Object before) { this.before = before; }
    public void setFirst(Integer first) { this.first = first; }
    public void setJob(String job) { this.job = job; }
    public void setPartitionKey(String partitionKey) { this.partitionKey = partitionKey; }
  }
  public static class QueryRunArgs {
    private Object id;
  
    public QueryRunArgs(Map<String, Object> args) {
      if (args != null) {
        this.id = (Object) args.get("id");
      }
    }
  
    public Object getId() { return this.id; }
    public void setId(Object id) { this.id = id; }
  }
  public static class QueryRunsArgs {
    private String after;
    private Integer first;
    private String job;
    private String partitionKey;
    private Iterable<RunStatus> statuses;
  
    public QueryRunsArgs(Map<String, Object> args) {
      if (args != null) {
        this.after = (String) args.get("after");
        this.first = (Integer) args.get("first");
        this.job = (String) args.get("job");
        this.partitionKey = (String) args.get("partitionKey");
        if (args.get("statuses") != null) {
        		this.statuses = ((List<Object>) args.get("statuses")).stream()
        				.map(item -> item instanceof RunStatus ? item : RunStatus.valueOf((String) item))
        				.map(RunStatus.class::cast)
        				.collect(Collectors.toList());
        }
      }
    }
  
    public String getAfter() { return this.after; }
    public Integer getFirst() { return this.first; }
    public String getJob() { return this.job; }
    public String getPartitionKey() { return this.partitionKey; }
    public Iterable<RunStatus> getStatuses() { return this.statuses; }
    public void setAfter(String after) { this.after = after; }
    public void setFirst(Integer first) { this.first = first; }
    public void setJob(String job) { this.job = job; }
    public void setPartitionKey(String partitionKey) { this.partitionKey = partitionKey; }
    public void setStatuses(Iterable<RunStatus> statuses) { this.statuses = statuses; }
  }
  public static class QueryTriggerArgs {
    private String name;
  
    public QueryTriggerArgs(Map<String, Object> args) {
      if (args != null) {
        this.name = (String) args.get("name");
      }
    }
  
    public String getName() { return this.name; }
    public void setName(String name) { this.name = name; }
  }
  /** Which partitions of the selection run again. */
  public enum Reprocess {
    ALL,
    FAILED_AND_MISSING,
    MISSING
    
  }
  
  public static class ResumeBackfillInput {
    private Object id;
  
    public ResumeBackfillInput(Map<String, Object> args) {
      if (args != null) {
        this.id = (Object) args.get("id");
      }
    }
  
    public Object getId() { return this.id; }
    public void setId(Object id) { this.id = id; }
  }
  
  public static class RetryBackfillInput {
    private Object id;
    private String idempotencyKey;
    private Iterable<RetryInclude> include;
  
    public RetryBackfillInput(Map<String, Object> args) {
      if (args != null) {
        this.id = (Object) args.get("id");
        this.idempotencyKey = (String) args.get("idempotencyKey");
        if (args.get("include") != null) {
        		this.include = ((List<Object>) args.get("include")).stream()
        				.map(item -> item instanceof RetryInclude ? item : RetryInclude.valueOf((String) item))
        				.map(RetryInclude.class::cast)
        				.collect(Collectors.toList());
        }
      }
    }
  
    public Object getId() { return this.id; }
    public String getIdempotencyKey() { return this.idempotencyKey; }
    public Iterable<RetryInclude> getInclude() { return this.include; }
    public void setId(Object id) { this.id = id; }
    public void setIdempotencyKey(String idempotencyKey) { this.idempotencyKey = idempotencyKey; }
    public void setInclude(Iterable<RetryInclude> include) { this.include = include; }
  }
  
  /** Which partitions of a backfill `retryBackfill` runs again. */
  public enum RetryInclude {
    CANCELED,
    FAILED,
    NOT_RUN
    
  }
  
  
  public static class RevokeApiTokenInput {
    private Object id;
  
    public RevokeApiTokenInput(Map<String, Object> args) {
      if (args != null) {
        this.id = (Object) args.get("id");
      }
    }
  
    public Object getId() { return this.id; }
    public void setId(Object id) { this.id = id; }
  }
  
  public static class RunLogsArgs {
    private String after;
    private Integer first;
  
    public RunLogsArgs(Map<String, Object> args) {
      if (args != null) {
        this.after = (String) args.get("after");
        this.first = (Integer) args.get("first");
      }
    }
  
    public String getAfter() { return this.after; }
    public Integer getFirst() { return this.first; }
    public void setAfter(String after) { this.after = after; }
    public void setFirst(Integer first) { this.first = first; }
  }
  
  
  /** Why a run failed. */
  public enum RunFailureReason {
    ERROR,
    TIMEOUT,
    WORKER_LOST
    
  }
  
  
  
  
  /** The status of one run (one attempt of one partition). */
  public enum RunStatus {
    CANCELED,
    FAILED,
    QUEUED,
    RUNNING,
    SKIPPED,
    SUCCESS
    
  }
  
  
  
  public static class SetTeamLimitInput {
    private Integer maxConcurrentRuns;
    private String team;
  
    public SetTeamLimitInput(Map<String, Object> args) {
      if (args != null) {
        this.maxConcurrentRuns = (Integer) args.get("maxConcurrentRuns");
        this.team = (String) args.get("team");
      }
    }
  
    public Integer getMaxConcurrentRuns() { return this.maxConcurrentRuns; }
    public String getTeam() { return this.team; }
    public void setMaxConcurrentRuns(Integer maxConcurrentRuns) { this.maxConcurrentRuns = maxConcurrentRuns; }
    public void setTeam(String team) { this.team = team; }
  }
  
  public static class SetTriggerEnabledInput {
    private Boolean enabled;
    private String name;
  
    public SetTriggerEnabledInput(Map<String, Object> args) {
      if (args != null) {
        this.enabled = (Boolean) args.get("enabled");
        this.name = (String) args.get("name");
      }
    }
  
    public Boolean getEnabled() { return this.enabled; }
    public String getName() { return this.name; }
    public void setEnabled(Boolean enabled) { this.enabled = enabled; }
    public void setName(String name) { this.name = name; }
  }
  
  /** Why a partition of a selection will not run. */
  public enum SkipReason {
    ALREADY_FAILED,
    ALREADY_SUCCEEDED,
    MARKED_SKIPPED,
    UPSTREAM_FAILED
    
  }
  
  
  public static class SubscriptionBackfillProgressArgs {
    private Object id;
  
    public SubscriptionBackfillProgressArgs(Map<String, Object> args) {
      if (args != null) {
        this.id = (Object) args.get("id");
      }
    }
  
    public Object getId() { return this.id; }
    public void setId(Object id) { this.id = id; }
  }
  
  public static class TagInput {
    private String key;
    private String value;
  
    public TagInput(Map<String, Object> args) {
      if (args != null) {
        this.key = (String) args.get("key");
        this.value = (String) args.get("value");
      }
    }
  
    public String getKey() { return this.key; }
    public String getValue() { return this.value; }
    public void setKey(String key) { this.key = key; }
    public void setValue(String value) { this.value = value; }
  }
  
  
  public static class TriggerEvaluationsArgs {
    private String after;
    private Integer first;
  
    public TriggerEvaluationsArgs(Map<String, Object> args) {
      if (args != null) {
        this.after = (String) args.get("after");
        this.first = (Integer) args.get("first");
      }
    }
  
    public String getAfter() { return this.after; }
    public Integer getFirst() { return this.first; }
    public void setAfter(String after) { this.after = after; }
    public void setFirst(Integer first) { this.first = first; }
  }
  public static class TriggerNextFireTimesArgs {
    private Integer count;
  
    public TriggerNextFireTimesArgs(Map<String, Object> args) {
      if (args != null) {
        this.count = (Integer) args.get("count");
      }
    }
  
    public Integer getCount() { return this.count; }
    public void setCount(Integer count) { this.count = count; }
  }
  /** What a cron trigger does with the ticks that passed while no daemon ran. */
  public enum TriggerCatchUp {
    ALL,
    LATEST,
    NONE
    
  }
  
  
  
  
  /** How an evaluation of a trigger ended. */
  public enum TriggerEvaluationOutcome {
    FAILED,
    LAUNCHED,
    SKIPPED
    
  }
  
  
  public static class UpdateApiTokenInput {
    private Object id;
    private String team;
  
    public UpdateApiTokenInput(Map<String, Object> args) {
      if (args != null) {
        this.id = (Object) args.get("id");
        this.team = (String) args.get("team");
      }
    }
  
    public Object getId() { return this.id; }
    public String getTeam() { return this.team; }
    public void setId(Object id) { this.id = id; }
    public void setTeam(String team) { this.team = team; }
  }
  
  public static class UpdateBackfillInput {
    private String description;
    private Object id;
    private Integer maxConcurrentRuns;
    private Integer priority;
    private String title;
  
    public UpdateBackfillInput(Map<String, Object> args) {
      if (args != null) {
        this.description = (String) args.get("description");
        this.id = (Object) args.get("id");
        this.maxConcurrentRuns = (Integer) args.get("maxConcurrentRuns");
        this.priority = (Integer) args.get("priority");
        this.title = (String) args.get("title");
      }
    }
  
    public String getDescription() { return this.description; }
    public Object getId() { return this.id; }
    public Integer getMaxConcurrentRuns() { return this.maxConcurrentRuns; }
    public Integer getPriority() { return this.priority; }
    public String getTitle() { return this.title; }
    public void setDescription(String description) { this.description = description; }
    public void setId(Object id) { this.id = id; }
    public void setMaxConcurrentRuns(Integer maxConcurrentRuns) { this.maxConcurrentRuns = maxConcurrentRuns; }
    public void setPriority(Integer priority) { this.priority = priority; }
    public void setTitle(String title) { this.title = title; }
  }
  
  
  /** Why a request was refused. Every code is stable in v1. */
  public enum UserErrorCode {
    ASSET_NOT_FOUND,
    BACKFILL_NOT_FOUND,
    EMPTY_SELECTION,
    FORBIDDEN,
    IDEMPOTENCY_KEY_REUSED,
    INVALID_ARGUMENT,
    INVALID_PARTITION_RANGE,
    INVALID_RUN_CONFIG,
    INVALID_STATE,
    JOB_NOT_FOUND,
    NOT_FOUND,
    PARTITIONS_RUNNING,
    PARTITION_NOT_FOUND,
    RANGE_TOO_LARGE,
    RATE_LIMITED,
    TRIGGER_NOT_FOUND,
    UNAUTHENTICATED
    
  }
  
  
}
