"""The daemon's consolidation methods: run, cancel, receipts, and the model route's settings.

One `Consolidator` per daemon keeps the model clients and the per-review serialisation. A run
reports its phases as `consolidation/progress`; `consolidation/cancel` cancels the running
requests of a session (the one asking the model and any queued behind it), each of which ends
as a `cancelled` receipt or refusal unless the commit barrier was reached (then it finishes).
Every run that ends is told to every client as `consolidation/finished`, so review badges follow
it wherever it was started; a committed review also announces the memory it changed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ..consolidation.models import list_models
from ..consolidation.route import Route, RouteError, resolve_route, store_api_key
from ..consolidation.runner import Consolidator, Refused
from ..consolidation.settle import settle_committing
from ..fsutil import Unwritable
from ..home import Home, HomeUnusable
from ..locks import LockUnusable
from ..memory.identity import WorkspaceId
from ..protocol import rpc
from ..protocol.consolidation import ConsolidationResult, Receipt, Status
from ..protocol.rpc import (
    CONSOLIDATION_REFUSED,
    CancelResult,
    ConsolidateParams,
    ConsolidationFinished,
    ConsolidationProgress,
    Empty,
    ModelList,
    ModelSettings,
    ModelsParams,
    ReceiptsParams,
    ReceiptsResult,
    RpcError,
    SelectModelParams,
    SetApiKeyParams,
)
from ..settings import (
    Settings,
    SettingsConflict,
    SettingsError,
    SettingsStore,
    check_model_id,
    model_changes,
    model_to_choose,
    unserved_model,
)
from .jsonrpc import Handler, log_failed, unwritable
from .memory_methods import MemoryMethods, Publish, home_in_the_way, unheard

log = logging.getLogger("remem.daemon")
T = TypeVar("T")


class ConsolidationMethods:
    def __init__(self, home: Home, memory: MemoryMethods, publish: Publish = unheard) -> None:
        self.home = home
        self.consolidator = Consolidator(home)
        self._memory = memory
        self._publish = publish
        # Every run of a session: a second request waits behind the first for the review, and a
        # cancel must reach the one asking the model as well as those waiting.
        # Each session's runs, each with the name its caller gave it (`ConsolidateParams.run`).
        self._running: dict[str, dict[asyncio.Task[Any], str | None]] = {}
        self._cancelling: set[asyncio.Task[Any]] = set()  # runs asked to stop

    def handlers(self) -> dict[str, Handler]:
        return {
            rpc.CONSOLIDATION_RUN.name: self.run,
            rpc.CONSOLIDATION_CANCEL.name: self.cancel,
            rpc.CONSOLIDATION_RECEIPTS.name: self.receipts,
            rpc.CONSOLIDATION_SETTINGS_READ.name: self.read_settings,
            rpc.CONSOLIDATION_SETTINGS_SELECT.name: self.select,
            rpc.CONSOLIDATION_CREDENTIALS_SET.name: self.set_api_key,
            rpc.CONSOLIDATION_MODELS.name: self.models,
        }

    async def run(self, params: ConsolidateParams) -> ConsolidationResult:
        def progress(phase: str, data: dict[str, Any]) -> None:
            self._publish(
                "consolidation/progress", ConsolidationProgress(session=params.session, phase=phase, **data)
            )

        task = asyncio.current_task()
        assert task is not None
        self._running.setdefault(params.session, {})[task] = params.run
        outcome = None  # what the run came to, told to every client: their badges may change
        try:
            with home_in_the_way(self.home):  # its memory read as memory requests read it
                result = await self.consolidator.consolidate(params.session, progress)
            outcome = result.status.value
        except Refused as exc:
            outcome = exc.code
            data = {"code": exc.code} | ({"files": exc.files} if exc.files else {})
            raise RpcError(CONSOLIDATION_REFUSED, exc.message, data) from None
        except Unwritable as exc:  # as the dispatcher says it, for a command without the daemon too
            outcome = "UNWRITABLE"
            raise unwritable(exc) from None
        except asyncio.CancelledError:
            # Cancelled before an attempt began (an attempt ends as a `cancelled` receipt):
            # the run still gets an answer, or its client would wait for ever.
            if task not in self._cancelling:
                raise
            outcome = "CANCELLED"
            raise refused(
                "CANCELLED", "cancelled before the model was asked; run it again to review"
            ) from None
        except (HomeUnusable, LockUnusable):  # answered HOME_UNUSABLE by the dispatcher
            outcome = "HOME_UNUSABLE"
            raise
        except Exception:  # a bug's, answered INTERNAL: its receipt may have moved all the same
            outcome = "INTERNAL"
            raise
        finally:
            self._forget(params.session, task)
            if outcome is not None:
                self._publish(
                    "consolidation/finished", ConsolidationFinished(session=params.session, outcome=outcome)
                )
        if result.status is Status.COMMITTED and not result.recovered:
            await self._announce(result.review)
        return result

    async def settle(self) -> None:
        """Finish the reviews a crash left committing (no model), before memory is read."""
        try:
            await asyncio.to_thread(settle_committing, self.home, self.consolidator.store)
        except Exception as exc:  # the daemon still serves; the next reader tries again
            log_failed("settling the reviews a crash left committing", exc)

    async def cancel(self, params: ConsolidateParams) -> CancelResult:
        runs = self._running.get(params.session, {})
        tasks = [task for task, run in runs.items() if params.run in (None, run)]
        for task in tasks:
            self._cancelling.add(task)
            task.cancel()
        return CancelResult(cancelled=bool(tasks))

    def _forget(self, session: str, task: asyncio.Task[Any]) -> None:
        tasks = self._running.get(session, {})
        tasks.pop(task, None)
        if not tasks:
            self._running.pop(session, None)
        self._cancelling.discard(task)

    async def receipts(self, params: ReceiptsParams, *, misnamed: bool = True) -> ReceiptsResult:
        """`consolidation/receipts`; without the `misnamed` files' error for a caller of the daemon's
        own that shows no errors (the editor's overview), which need not read them to drop it."""
        receipts, errors = await asyncio.to_thread(self.consolidator.receipts.listing)
        workspace = None if params.cwd is None else WorkspaceId.from_cwd(params.cwd).key

        def kept(r: Receipt) -> bool:
            return (
                params.session in (None, r.source.session)
                and workspace in (None, r.target.workspace)
                and params.review in (None, r.review)
            )

        wanted = [r for r in receipts if kept(r)]
        # An unreadable file's session and workspace are unknown; its review is its name.
        unreadable = [e for e in errors if params.review in (None, Path(e.path).stem)]
        # A file not named as a receipt is said in a filtered listing only when it may be one
        # of the filter's (decision 0547): a note, or another session's receipt, is not its error.
        filtered = (params.session, params.cwd, params.review) != (None, None, None)
        if misnamed:
            found = await asyncio.to_thread(self.consolidator.receipts.misnamed, kept if filtered else None)
            unreadable += [found] if found is not None else []
        interrupted = await asyncio.to_thread(self.consolidator.receipts.interrupted, wanted)
        return ReceiptsResult(
            receipts=wanted,
            errors=unreadable,
            interrupted=[r.review for r in wanted if r.review in interrupted],
        )

    async def read_settings(self, params: Empty) -> ModelSettings:
        return await asyncio.to_thread(self._model_settings)

    async def select(self, params: SelectModelParams) -> ModelSettings:
        def update() -> ModelSettings:
            settings, _ = _settings(self.home)
            if params.provider not in settings.all_providers():
                known = ", ".join(sorted(settings.all_providers()))
                raise refused("INVALID", f"`{params.provider}` is not a provider; use one of {known}")
            try:
                check_model_id(params.model)
            except ValueError as exc:
                raise refused("INVALID", str(exc)) from None
            # Written, it would read back as no model chosen (decision 0500): say so now.
            base_url = settings.all_providers()[params.provider].base_url
            unserved = unserved_model(params.provider, base_url, params.model)
            if unserved is not None:
                raise refused("INVALID", model_to_choose(params.provider, "choose one it serves", unserved))
            SettingsStore(self.home).update(
                params.expectedRevision, model_changes(params.provider, params.model)
            )
            return self._model_settings()

        try:
            return await _writing(update)
        except SettingsConflict as exc:
            raise refused("STALE_SETTINGS", str(exc)) from None  # the conflict says it whole

    async def set_api_key(self, params: SetApiKeyParams) -> ModelSettings:
        def store() -> ModelSettings:
            settings, _ = _settings(self.home)
            provider = settings.all_providers().get(params.provider)
            if provider is None or provider.api_key_env is None:
                raise refused("INVALID", f"`{params.provider}` is not a provider that takes an API key")
            try:
                store_api_key(self.home, params.provider, params.apiKey)
            except RouteError as exc:
                raise refused("INVALID", str(exc)) from None
            return self._model_settings()

        return await _writing(store)

    async def models(self, params: ModelsParams) -> ModelList:
        def route() -> Route:
            settings, _ = _settings(self.home)
            if params.provider not in settings.all_providers():
                raise refused("INVALID", f"`{params.provider}` is not a provider")
            chosen = settings.consolidation.model_copy(update={"provider": params.provider})
            return resolve_route(
                self.home, settings.model_copy(update={"consolidation": chosen}), listing=True
            )

        try:
            found = await asyncio.to_thread(route)
        except RouteError as exc:
            return ModelList(provider=params.provider, keyReady=False, keyProblem=str(exc),
                             note="without its key the provider cannot list its models")  # fmt: skip
        models, note = await list_models(found)
        return ModelList(provider=params.provider, keyReady=True, models=models, note=note)

    def _model_settings(self) -> ModelSettings:
        settings, revision = _settings(self.home)
        providers = settings.all_providers()
        route = settings.consolidation
        try:
            resolve_route(self.home, settings)
            problem = None
        except RouteError as exc:
            problem = str(exc)
        return ModelSettings(
            provider=route.provider, model=settings.chosen_model, providers=sorted(providers),
            apiKeyEnv=providers[route.provider].api_key_env if route.provider in providers else None,
            revision=revision, keyReady=problem is None, keyProblem=problem,
        )  # fmt: skip

    async def _announce(self, review: str) -> None:
        receipt = await asyncio.to_thread(self.consolidator.receipts.read, review)
        if receipt is None:
            return
        await self._memory.scope_changed(None)
        await self._memory.scope_changed(receipt.target.workspace)


def _settings(home: Home) -> tuple[Settings, str]:
    """settings.yml and its revision, or a refusal naming what is wrong in it."""
    try:
        return SettingsStore(home).read()
    except SettingsError as exc:
        raise refused("INVALID", f"settings.yml is invalid: {exc}") from None


def refused(code: str, message: str) -> RpcError:
    """A consolidation refusal: `code` is what a client acts on, `message` what a person reads."""
    return RpcError(CONSOLIDATION_REFUSED, message, {"code": code})


async def _writing(write: Callable[[], T]) -> T:
    """`write()` off the event loop; a write the disk refused is UNWRITABLE, as the dispatcher
    says it, for a command without the daemon too."""
    try:
        return await asyncio.to_thread(write)
    except Unwritable as exc:
        raise unwritable(exc) from None
