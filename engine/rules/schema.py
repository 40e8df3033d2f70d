"""The rule-file schema: raw ``*Spec`` models, validated with pydantic.

These models say what a rule file may contain; ``compile.py`` turns them into the
immutable model the interpreter runs. Field docstrings become the JSON Schema
descriptions that ``engine schema`` publishes for editors.

Convention (see docs/rules.md): a field documented as *query* holds a JMESPath
expression evaluated on the pass context; a field documented as *text* is a string
that may hold Jinja ``{{ }}`` and renders to a string; durations are Go syntax.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

from engine import durations

Query = Annotated[str, Field(description="A JMESPath expression over the pass context.")]
Text = Annotated[str, Field(description="A string; `{{ }}` parts are Jinja, rendered on the pass context.")]
Duration = Annotated[str, Field(pattern=durations.PATTERN,
                                description="A Go duration such as 10s, 1m or 720h.")]
Name = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", description="A name usable in expressions.")]
Cluster = Annotated[str, Field(description="management (the default), order (the order's cluster), or a text "
                                           "naming a registered cluster (`{{ serverCluster }}`; \"\" is the "
                                           "management cluster).")]


class Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


# ---------------------------------------------------------------------------
# The order kind and its children


class OrderSpec(Spec):
    """The custom resource this rule file serves."""

    apiVersion: str = Field(pattern=r"^[a-z0-9.-]+/[a-z0-9]+$", description="The order kind's group/version.")
    plural: str = Field(pattern=r"^[a-z0-9]+$", description="The order kind's resource name (its CRD's plural).")
    finalizer: str = Field(description="The finalizer that holds a deleting order until its teardown is done.")
    fieldManager: str = Field(description="The Server-Side Apply field manager of every write.")


class ReadySpec(Spec):
    """The aggregate condition: True when every sub-condition is True."""

    type: str = Field("Ready", description="The aggregate condition's type.")
    trueReason: str = Field(description="Its reason when every sub-condition is True.")
    trueMessage: str = Field(description="Its message when every sub-condition is True.")
    falseReason: str = Field(description="Its reason when a sub-condition is not True.")
    falseMessage: str = Field(description="Its message when a sub-condition is not True.")


class ConditionsSpec(Spec):
    """The condition types the order's status carries."""

    types: list[str] = Field(min_length=1, description="The sub-conditions, in the order they are written.")
    ready: ReadySpec
    reasons: list[str] = Field(description="Every reason a rule may write; lint refuses any other.")
    maxMessageBytes: int = Field(32768, description="Longer condition messages are cut on a character boundary.")
    truncateSuffix: str = Field(" […truncated]", description="What a cut message ends with.")


class CachedKind(Spec):
    """A kind named in ``children.cacheOnlyLabelled``."""

    apiVersion: str = Field(description="The kind's group/version.")
    kind: str = Field(description="The kind.")


class ChildrenSpec(Spec):
    """How children in another namespace are named and recognised: the prefix AND every label."""

    prefix: Text
    labels: dict[str, Text]
    namespace: Text = Field(description="Where the order's children live on the management cluster.")
    cacheOnlyLabelled: list[CachedKind] = Field(
        default_factory=list,
        description="Kinds the operator caches only when they carry the name label (children, delivered objects);"
                    " a read of any other object of these kinds goes to the API server.")
    quietRemoval: Query | None = Field(
        None, description="A query on a child (the object as it was): where it holds, the child's removal after the"
                          " order's own step deleted it (once finalizers let it go) wakes nothing, since no rule"
                          " tells 'being deleted' from 'gone' for it. Teardown deletes and anyone else's always wake.")


# ---------------------------------------------------------------------------
# Inputs and values


class ObjectAddress(Spec):
    apiVersion: Text
    kind: Text
    namespace: Text | None = None
    name: Text


class ListAddress(Spec):
    apiVersion: Text
    kind: Text
    namespace: Text | None = None
    labels: dict[str, Text] | None = Field(None, description="Only objects carrying these labels.")


class KindAddress(Spec):
    apiVersion: Text
    kind: Text


class InputSpec(Spec):
    """An object (get), the objects (list), or whether a kind is served (served), read when first named."""

    get: ObjectAddress | None = Field(None, description="Read one object.")
    list: ListAddress | None = Field(None, description="List objects of a kind.")
    served: KindAddress | None = Field(None, description="True when the cluster serves the kind (discovery).")
    cluster: Cluster = "management"
    where: Query | None = Field(None, description="list: keep items for which this query is true; it reads the "
                                                  "item as `item`, beside every name of the pass.")
    sortBy: Query | None = Field(None, description="list: sort items by this query, reading each as `item`.")
    children: bool = Field(False, description="list: keep only the order's own children (labels and prefix).")
    live: bool = Field(False, description="Read from the API server, never from a cache.")
    labelled: bool = Field(False, description="get: the object carries the order's ownership labels (a child, a "
                                              "delivered object): of a kind in children.cacheOnlyLabelled, the "
                                              "cache alone answers (not there reads null, with no request).")
    unserved: Literal["absent", "error"] = Field(
        "absent", description="A kind the cluster does not serve reads as absent (get: null, list: []) or fails.")
    error: Text | None = Field(None, description="The pass error when the read fails; `{{ error }}` is the cause.")

    @model_validator(mode="after")
    def _one_read(self) -> InputSpec:
        if sum(x is not None for x in (self.get, self.list, self.served)) != 1:
            raise ValueError("an input has exactly one of get, list or served")
        if self.labelled and (self.get is None or self.live):
            raise ValueError("labelled is for a get that is not live")
        return self


class RowSpec(Spec):
    """One row of a decision table: the first row whose `when` holds gives the value (a query, or a text)."""

    when: Query | None = None
    value: Query | None = None
    text: Text | None = Field(None, description="Jinja text rendered with the pass's values (a URL, a document).")

    @model_validator(mode="after")
    def _one_value(self) -> RowSpec:
        if (self.value is None) == (self.text is None):
            raise ValueError("a row has exactly one of value or text")
        return self


class TextValueSpec(Spec):
    """A string built as the document it is (a YAML file, a URL): Jinja over the pass's values."""

    text: Text = Field(description="Jinja text rendered with the pass's values; a final newline is kept.")


ValueSpec = Query | TextValueSpec | list[RowSpec]


class OutputDefaultSpec(Spec):
    """A step output with what it reads when the step did not go through."""

    value: Query = Field(description="Evaluated at the step's end, over the step's own `set`/`as` names.")
    default: Query = Field(description="What the output reads when the step stopped early, was skipped or "
                                       "failed; a query over the pass's values and earlier outputs.")


OutputSpec = Query | TextValueSpec | OutputDefaultSpec | list[RowSpec]


# ---------------------------------------------------------------------------
# Conditions written by gates and actions


class ErrorSpec(Spec):
    """What a failed API call reports: the step's condition, and the pass error."""

    reason: str | None = Field(None, description="The condition's reason when the call fails (one of "
                                                 "conditions.reasons).")
    message: Text = Field("{{ error }}", description="The condition message; `{{ error }}` is the error text.")
    wrap: Text | None = Field(None, description="The pass error's text; default: the message.")
    writeCondition: bool = Field(True, description="false: return the error only; the step's condition keeps "
                                                   "what it held before the pass.")


class OutcomeSpec(Spec):
    """A condition verdict: reason, message, and when to come back."""

    reason: str = Field(description="The condition's reason: one of conditions.reasons.")
    message: Text
    requeue: Duration | Query | None = Field(None, description="A duration, or a query giving seconds.")


class BranchSpec(OutcomeSpec):
    when: Query | None = None


class ForeignSpec(OutcomeSpec):
    """An apply's verdict on a live object of the child's name that is not the order's."""

    continue_: bool = Field(False, alias="continue", description="Record the verdict (a refusal, as a `refuse` "
                                                                 "with continue) and run the rest of the step; the "
                                                                 "action binds `as` to null.")


class GateConditionSpec(Spec):
    """A condition a gate writes, with its own reason and message (default: the gate's)."""

    type: str = Field(description="The condition type (one of conditions.types).")
    when: Query | None = Field(None, description="Write this condition only when this query holds; otherwise it "
                                                 "keeps what it held (the gate still refuses).")
    reason: str | None = Field(None, description="Its reason (default: the gate's).")
    message: Text | None = None


class GateVerdictSpec(Spec):
    """One row of a gate's verdict table: the first row whose `when` holds is the gate's verdict."""

    name: str | None = Field(None, description="What `engine render` calls the row (default: the gate's name).")
    when: Query
    reason: str = Field(description="A declared reason, or a text rendered from the pass (`{{ cause.reason }}`) "
                                    "that must give a declared one.")
    message: Text
    requeue: Duration | Query | None = Field(None, description="Default: the gate's requeue.")
    fail: bool | None = Field(None, description="Default: the gate's fail.")
    error: ErrorSpec | None = Field(None, description="A read that fails in this row's `when` (default: the "
                                                      "gate's error).")


class GateSpec(Spec):
    """An ordered refusal before any step, or the point where the finalizer is installed."""

    name: str | None = Field(None, description="The gate's name, in logs and in `engine render`.")
    when: Query | None = None
    conditions: Literal["all"] | list[str | GateConditionSpec] = Field(
        "all", description="The conditions written False: all, or a list of types, each a name or "
                           "{type, when, reason, message} with its own texts.")
    reason: str | None = Field(None, description="A declared reason, or a text rendered from the pass that must "
                                                 "give a declared one.")
    message: Text | None = None
    requeue: Duration | Query | None = None
    finalizer: bool = Field(False, description="Install the finalizer here (ends the pass when it was missing).")
    fail: bool = Field(False, description="The refusal also ends the pass with its message as the error (backoff).")
    error: ErrorSpec | None = Field(None, description="A read that fails while the gate is checked writes the "
                                                      "gate's conditions with this reason, and fails the pass.")
    verdicts: list[GateVerdictSpec] | None = Field(
        None, min_length=1, description="Instead of when, reason and message: rows tried in order, the first "
                                        "whose `when` holds refuses with its reason, message and requeue.")

    @model_validator(mode="after")
    def _shape(self) -> GateSpec:
        if self.finalizer:
            if self.when or self.reason or self.message or self.fail or self.error or self.verdicts:
                raise ValueError("a finalizer gate takes only requeue")
        elif self.verdicts is not None:
            if self.when or self.reason or self.message:
                raise ValueError("a gate with verdicts takes when, reason and message from each row, not its own")
        elif not (self.when and self.reason and self.message):
            raise ValueError("a gate needs when, reason and message (or verdicts)")
        return self


# ---------------------------------------------------------------------------
# Actions


class ActionBase(Spec):
    when: Query | None = Field(None, description="Run the action only when this query is true.")
    error: ErrorSpec | None = None


class ApplySpec(ActionBase):
    """Server-Side Apply a child rendered from a template (skipped when the live object already matches)."""

    apply: str = Field(description="The template file, relative to templates/<kind>/.")
    cluster: Cluster = "management"
    adopt: Literal["children", "any", "owned"] = Field(
        "children", description="children: refuse to overwrite a live object that is not the order's child; "
                                "owned: refuse one the order does not control (controller ownerReference), and "
                                "create (not apply) one the cache does not hold, so the server says whether the "
                                "name is taken; any: no check.")
    as_: Name | None = Field(None, alias="as", description="Bind the object as stored to this name.")
    status: bool = Field(False, description="Apply to the status subresource.")
    foreign: ForeignSpec | None = Field(
        None, description="A live object of that name that is not the order's child (adopt: owned: that the "
                          "order does not control) stops the step with this verdict (default: the step fails "
                          "with an error).")
    once: bool = Field(False, description="Create the object when it is absent and never apply it again: a live "
                                          "child is bound as it is; a live object that is not the order's child "
                                          "gets the `foreign` verdict.")
    for_each: Query | None = Field(
        None, alias="forEach", description="A query giving a list: the template is rendered and applied once per "
                                           "element, which it reads as `item` (`as` binds the list of objects "
                                           "stored).")

    @model_validator(mode="after")
    def _owned_is_no_status_apply(self) -> ApplySpec:
        if self.adopt == "owned" and self.status:
            raise ValueError("adopt: owned creates an object the cache does not hold, so it cannot apply the "
                             "status subresource (status: true)")
        if self.once and (self.adopt != "children" or self.status):
            raise ValueError("once: true creates the order's child once: it takes neither adopt (other than "
                             "children) nor status: true")
        return self


class EnsureSpec(ActionBase):
    """Create a child once if it is absent; never rewrite it (generated secrets)."""

    ensure: str = Field(description="The template file, relative to templates/<kind>/.")
    cluster: Cluster = "management"
    as_: Name | None = Field(None, alias="as")


class PatchSpec(ActionBase):
    """A JSON merge patch of a bound object (or its status)."""

    patch: Name = Field(description="The bound object to patch.")
    body: Query = Field(description="A query giving the merge patch.")
    status: bool = Field(False, description="Patch the status subresource.")
    as_: Name | None = Field(None, alias="as")
    cluster: Cluster = "management"
    tolerate: list[str] = Field(default_factory=list,
                                description="Error names (NotFound, Conflict, ...) that skip the patch silently.")


class DeleteSpec(ActionBase):
    """Delete the objects a query selects (a bound object or a list)."""

    delete: Query = Field(description="A query giving an object or a list of objects to delete.")
    cluster: Cluster = "management"


class WaitSpec(ActionBase):
    """Stop the step with a False condition unless `for` holds."""

    wait: Query = Field(description="The predicate to wait for.")
    reason: str = Field(description="The condition's reason: one of conditions.reasons.")
    message: Text
    requeue: Duration | Query | None = None
    continue_: bool = Field(False, alias="continue", description="Record the verdict and run the rest of the step; "
                                                                 "the step counts as done for `requires`.")
    otherwise: list[BranchSpec] = Field(default_factory=list,
                                        description="Verdicts tried in order before reason/message.")


class RefuseSpec(ActionBase):
    """Stop the step with a False condition when `refuse` holds."""

    refuse: Query
    reason: str = Field(description="The condition's reason: one of conditions.reasons.")
    message: Text
    requeue: Duration | Query | None = None
    continue_: bool = Field(False, alias="continue", description="Record the verdict and run the rest of the step; "
                                                                 "the step counts as done for `requires`.")


class StatusSpec(ActionBase):
    """Write status fields (a null value removes the field)."""

    status: dict[str, Query]


class SetSpec(ActionBase):
    """Bind names for the actions that follow."""

    set: dict[Name, ValueSpec] = Field(description="Names bound for the rest of the step, each a query, a text or "
                                                   "a decision table.")


class LogSpec(ActionBase):
    """Write a log line with the order, its cluster and the step (never put a secret in it)."""

    log: Text
    level: Literal["debug", "info", "warning", "error"] = Field("info", description="The log level.")


class FailSpec(ActionBase):
    """End the pass with an error (retried with backoff) after writing the condition."""

    fail: Text
    reason: str = Field(description="The condition's reason: one of conditions.reasons.")


ACTION_KEYS = ("apply", "ensure", "patch", "delete", "wait", "refuse", "set", "fail", "log", "status")
"""The key that names an action, tried in this order (apply and patch also take a `status` flag)."""


def action_key(value: Any) -> str | None:
    """The action a raw mapping describes, by the first action key it carries."""
    if isinstance(value, dict):
        for key in ACTION_KEYS:
            if key in value:
                return key
    return None


ActionSpec = Annotated[
    Annotated[ApplySpec, Tag("apply")]
    | Annotated[EnsureSpec, Tag("ensure")]
    | Annotated[PatchSpec, Tag("patch")]
    | Annotated[DeleteSpec, Tag("delete")]
    | Annotated[WaitSpec, Tag("wait")]
    | Annotated[RefuseSpec, Tag("refuse")]
    | Annotated[SetSpec, Tag("set")]
    | Annotated[FailSpec, Tag("fail")]
    | Annotated[LogSpec, Tag("log")]
    | Annotated[StatusSpec, Tag("status")],
    Discriminator(action_key, custom_error_type="unknown_action",
                  custom_error_message="an action needs one of: " + ", ".join(ACTION_KEYS)),
]


class StepOtherwiseSpec(Spec):
    """The step's condition when its `when` does not hold (the step is not run)."""

    status: bool = Field(False, description="true: the condition is True and the step counts as done.")
    reason: str = Field(description="The condition's reason: one of conditions.reasons.")
    message: Text


class StepSpec(Spec):
    """One sub-reconciler: owns one condition and one metrics name, runs actions in order."""

    name: str = Field(description="The step's name, for `requires` and in logs.")
    condition: str = Field(description="The condition type the step owns (one of conditions.types).")
    metric: str = Field(description="The sub_reconciler label of the step's metrics.")
    requires: list[str] = Field(default_factory=list, description="Earlier steps that must be done for this one "
                                                                    "to run; otherwise it is `skipped`.")
    when: Query | None = Field(None, description="Run the step only when this query is true; otherwise its "
                                                 "condition is `otherwise` (default: `skipped`).")
    otherwise: StepOtherwiseSpec | None = None
    skipped: OutcomeSpec | None = Field(None, description="The condition when a required step is not done.")
    error: ErrorSpec | None = None
    do: list[ActionSpec] = Field(min_length=1, description="The step's actions, run in order.")
    done: OutcomeSpec = Field(description="The condition written True when every action went through.")
    outputs: dict[Name, OutputSpec] = Field(
        default_factory=dict, description="Names every later step reads (and this step's `done`): each evaluated "
                                          "once when the step's actions went through; else its `default` (null).")

    @model_validator(mode="after")
    def _when_says_its_condition(self) -> StepSpec:
        if self.when is not None and self.otherwise is None and self.skipped is None:
            raise ValueError("a step with `when` needs `otherwise` (or `skipped`): the condition it writes when "
                             "`when` does not hold")
        if self.otherwise is not None and self.when is None:
            raise ValueError("`otherwise` is written when the step's `when` does not hold; the step has no `when`")
        return self


class RefreshSpec(Spec):
    """A default requeue, used when no step asked for one and `when` holds."""

    when: Query | None = None
    requeue: Duration | Query | None = Field(None, description="Omitted: no cap (the order waits for an event).")


class ResultSpec(Spec):
    """The pass result once the steps ran: the first matching refresh when no step asked to come back."""

    refresh: list[RefreshSpec] = Field(default_factory=list)


# ---------------------------------------------------------------------------
# Teardown


class TeardownActionBase(Spec):
    name: Name | None = Field(None, description="A name other actions refer to (a patch `guards` it).")
    when: Query | None = Field(None, description="Run the action only when this query is true.")


class ReadSpec(TeardownActionBase):
    """Read inputs (or values) now, before any delete: a failed read ends the pass with this error, writing
    nothing (no status, no delete), and the finalizer stays."""

    read: Name | list[Name] = Field(description="The inputs or values to read, in order.")
    error: Text | None = Field(None, description="The pass error; `{{ error }}` is the failed call's message. "
                                                 "Default: the input's own error text.")


class HoldSpec(TeardownActionBase):
    """While `hold` is true, write this condition, keep the finalizer and come back: nothing is deleted."""

    hold: Query
    condition: str = Field(description="The condition type written while the hold holds.")
    reason: str = Field(description="The condition's reason: one of conditions.reasons.")
    message: Text
    requeue: Duration = "1m"


class TeardownTarget(Spec):
    """What an action deletes or patches: the order's children of a kind (listed), or one object by name."""

    apiVersion: str = Field(description="The kind's group/version.")
    kind: str = Field(description="The kind to delete or patch.")
    name: Text | None = Field(None, description="One object of this name (a get); omitted: a list.")


class TargetActionBase(TeardownActionBase):
    namespace: Text = Field("{{ childNamespace }}", description="Where the objects live.")
    cluster: Cluster = "management"
    children: bool = Field(True, description="Only the order's children (the ownership labels select the list, "
                                             "then labels and prefix are checked on each item).")
    where: Query | None = Field(None, description="Keep only the items (`item`) for which this is true.")
    sortBy: list[Query] = Field(default_factory=list, description="Order of the items (then by name).")
    readError: Text | None = Field(None, description="The error when the list or get fails (`{{ error }}`).")
    error: Text | None = Field(None, description="The error when a write fails (`{{ item }}`, `{{ error }}`).")
    onError: Literal["stop", "continue"] = Field(
        "stop", description="stop: a patient teardown ends here with the errors so far; continue: go on.")


class TeardownDeleteSpec(TargetActionBase):
    """Delete every selected item (NotFound ignored); each delete issued counts."""

    delete: TeardownTarget


class TeardownPatchSpec(TargetActionBase):
    """A JSON merge patch of each selected item before it is deleted (skipped when it changes nothing)."""

    patch: TeardownTarget
    body: Query = Field(description="The merge patch, a query on the item as `item`.")
    guards: list[str] = Field(default_factory=list,
                              description="Actions skipped when this one fails; the rest go on, errors joined.")


class PhaseSpec(Spec):
    """A boundary: while patient, the actions after it run only on a pass where those before it failed nothing
    and deleted nothing (with `until`: where `until` holds)."""

    phase: str = Field(description="What the next phase does (for the reader).")
    until: Query | None = Field(None, description="While patient, the actions after the boundary run only when "
                                                  "this query holds (evaluated at the boundary), instead of only "
                                                  "on a pass that issued no delete before it.")


class TeardownFailSpec(TeardownActionBase):
    """End the pass with this error (retried with backoff): nothing after it runs, the finalizer stays."""

    fail: Text = Field(description="The pass error; the errors of earlier actions, if any, come before it.")


class TeardownLogSpec(TeardownActionBase):
    """Write a log line (never put a secret in it)."""

    log: Text
    level: Literal["debug", "info", "warning", "error"] = Field("info", description="The log level.")


TEARDOWN_KEYS = ("read", "hold", "patch", "delete", "phase", "log", "fail")
"""The key that names a teardown action."""


def teardown_key(value: Any) -> str | None:
    if isinstance(value, dict):
        for key in TEARDOWN_KEYS:
            if key in value:
                return key
    return None


TeardownActionSpec = Annotated[
    Annotated[ReadSpec, Tag("read")]
    | Annotated[HoldSpec, Tag("hold")]
    | Annotated[TeardownPatchSpec, Tag("patch")]
    | Annotated[TeardownDeleteSpec, Tag("delete")]
    | Annotated[PhaseSpec, Tag("phase")]
    | Annotated[TeardownLogSpec, Tag("log")]
    | Annotated[TeardownFailSpec, Tag("fail")],
    Discriminator(teardown_key, custom_error_type="unknown_action",
                  custom_error_message="a teardown action needs one of: " + ", ".join(TEARDOWN_KEYS)),
]


class TeardownSpec(Spec):
    """A deleting order's actions, in order; then the finalizer is released (or kept while patient)."""

    patientWhile: Query = Field(description="While true, the finalizer stays until a pass deletes nothing, and "
                                            "an error stops the actions; once false, every action runs and the "
                                            "finalizer is released whatever failed (fail-open).")
    patientRequeue: Duration = "10s"
    do: list[TeardownActionSpec] = Field(min_length=1, description="The teardown's actions, run in order.")


# ---------------------------------------------------------------------------
# Watches


class ReferenceSpec(Spec):
    """Where an order names the watched object: queries on the order (``order.spec...``), not on the object."""

    name: Query = Field(description="The name of the object the order references (or a list of names), read from "
                                    "the order: `order.spec.userRef.name`.")
    namespace: Query | None = Field(None, description="Its namespace, read from the order (null or '': the order's "
                                                      "own). Left out: the order's own namespace; for a kind without "
                                                      "namespaces the name alone is compared.")


class WatchSpec(Spec):
    """A kind whose events wake orders (beyond the order, its owned objects and its children)."""

    id: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
                           description="Names the watch. A watch of the including file with the id of an included "
                                       "one changes it: the fields it gives replace the included watch's (a mapping "
                                       "its mapping), the others are kept.")
    apiVersion: str | None = Field(None, description="The watched kind's apiVersion (required unless `id` names "
                                                     "an included watch).")
    kind: str | None = Field(None, description="The watched kind (required unless `id` names an included watch).")
    clusters: Literal["management", "all"] = Field(
        "management", description="Watch the management cluster, or every registered cluster too.")
    namespace: Query | None = Field(None, description="The order's namespace, from the object (default: its own).")
    name: Query | None = Field(None, description="The order's name, or a list of names, from the object (the order "
                                                 "on the event's cluster).")
    orders: Query | None = Field(None, description="The orders the object names: a name, a list of names, or maps "
                                                   "{name, namespace, cluster} (left out: the object's namespace, "
                                                   "the event's cluster).")
    index: Query | None = Field(None, description="Fan out to the orders, on every cluster, one of whose `indexKey` "
                                                  "keys equals this key (or one of this list of keys).")
    referencedBy: ReferenceSpec | Query | None = Field(
        None, description="Wake the orders, on the event's cluster, that name this object where this says (a query "
                          "on the order giving the name, or {name, namespace}); the engine keeps the index.")
    mapBy: Literal["labels"] | None = Field(
        None, description="`labels`: the object carries the order's ownership labels (children.labels), as one "
                          "another controller writes for the order does; it wakes that order.")
    changed: list[Query] = Field(default_factory=list,
                                 description="An update wakes orders only when one of these differs.")

    @model_validator(mode="after")
    def _one_mapping(self) -> WatchSpec:
        if sum(x is not None for x in (self.name, self.orders, self.index, self.referencedBy, self.mapBy)) > 1:
            raise ValueError("a watch maps its events one way: `name`, `orders`, `index`, `referencedBy` or `mapBy`")
        return self


class RuleFileSpec(Spec):
    """A rule file: everything the engine needs to serve one order kind."""

    kind: str = Field(description="The order kind served.")
    include: list[str] = Field(default_factory=list, description="Rule files merged before this one.")
    order: OrderSpec | None = None
    conditions: ConditionsSpec | None = None
    children: ChildrenSpec | None = None
    indexKey: Query | None = Field(None, description="The order's key, or list of keys, for `index` watches.")
    inputs: dict[Name, InputSpec] = Field(default_factory=dict, description="Named reads of the cluster, each read "
                                                                            "when an expression first names it.")
    values: dict[Name, ValueSpec] = Field(default_factory=dict, description="Named values computed from the order "
                                                                            "and the inputs: a query, a text or a "
                                                                            "decision table.")
    gates: list[GateSpec] = Field(default_factory=list, description="Checked in order before any step.")
    steps: list[StepSpec] = Field(default_factory=list, description="Run in order after the gates.")
    result: ResultSpec | None = None
    teardown: TeardownSpec | None = None
    watches: list[WatchSpec] = Field(default_factory=list)
    templates: str | None = Field(None, description="The template folder; default templates/<kind lowercased>.")


class IncludeFileSpec(RuleFileSpec):
    """A shared file other rule files include: the same keys, no kind of its own."""

    kind: str = ""
