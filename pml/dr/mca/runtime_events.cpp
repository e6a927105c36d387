// pml dr glue: the runtime's reports of dead processes. Open MPI 4.1's
// launcher tells every process of a job when one of its processes ended
// abnormally while the job goes on (ORTE with --enable-recovery sends
// OPAL_ERR_PROC_ABORTED through the PMIx event chain, the affected process
// in OPAL_PMIX_EVENT_AFFECTED_PROC). pml dr then declares that peer dead at
// once, as if its last path had failed, instead of waiting for
// pml_dr_peer_dead_timeout, which only a rank with frames pending to the
// peer would ever reach: a rank whose only business with it is a posted
// receive learns it here.
//
// Open MPI's own handler for every event ("MPI-Default",
// ompi_errhandler_callback) aborts the process whatever the communicators'
// error handlers say. Handlers registered for given codes run before the
// default ones, so ours sees the event first and, for a peer of this
// process, ends the chain (OPAL_ERR_HANDLERS_COMPLETE): the process lives
// on, and the error handler of the communicator of each operation that
// names the dead peer decides (MPI_ERRORS_RETURN hands the application
// MPI_ERR_OTHER; MPI_ERRORS_ARE_FATAL aborts there). Other events, and one
// naming this process itself, go on down the chain unchanged.
//
// The handler runs on the runtime's thread: it only queues the name. A
// progress callback acts on it on the thread that drives MPI, under the
// module lock.
//
// Open MPI 5.0 (PRRTE and OpenPMIx) reports the same through PMIx itself
// (PMIX_ERR_PROC_ABORTED, _ABORTED_BY_SIG, PMIX_ERR_PROC_TERM_WO_SYNC, the
// process in PMIX_EVENT_AFFECTED_PROC). There Open MPI's own handler for
// these codes (ULFM's, prepended) handles them without aborting, so ours is
// prepended before it, takes note and lets the chain go on. Only the
// registration and the handler's signature differ between the series.
#include <mutex>
#include <vector>

#include "deadline_timer.hpp"
#include "pml.hpp"
#include "reliability.hpp"

namespace pml::dr::mca {
namespace {

using plugin::common::logf;
using plugin::common::LogLevel;
using plugin::common::Micros;

struct RuntimeEvents {
    std::mutex mu;                          // dead: written on the runtime's thread
    std::vector<opal_process_name_t> dead;  // reported, not acted on yet
    std::atomic<bool> pending{false};       // dead is not empty
    std::atomic<bool> active{false};        // between init and fini
    std::atomic<int> registration{0};       // 0 waiting, 1 done, -1 failed
    std::size_t ref = 0;
    bool registered = false;
    bool progress_registered = false;
};
RuntimeEvents g_ev;

bool same(const opal_process_name_t& a, const opal_process_name_t& b) noexcept {
    return a.jobid == b.jobid && a.vpid == b.vpid;
}

// Queues a peer the runtime reports dead. True: it is a peer of ours (not
// this process, not a wildcard) and was queued.
bool note_dead(const opal_process_name_t& who) noexcept {
    const bool peer = g_ev.active.load() && who.jobid != OPAL_JOBID_INVALID &&
                      who.vpid != OPAL_VPID_INVALID && who.vpid != OPAL_VPID_WILDCARD &&
                      !same(who, OPAL_PROC_MY_NAME);
    if (peer) {
        try {
            const std::lock_guard lock(g_ev.mu);
            g_ev.dead.push_back(who);
            g_ev.pending.store(true);
        } catch (...) {  // out of memory: the peer is found dead the slow way
        }
    }
    return peer;
}

#if OMPI_MAJOR_VERSION < 5
// The process an event is about: OPAL_PMIX_EVENT_AFFECTED_PROC, else its source.
opal_process_name_t affected(const opal_process_name_t* source, opal_list_t* info) noexcept {
    opal_process_name_t who{OPAL_JOBID_INVALID, OPAL_VPID_INVALID};
    if (source != nullptr)
        who = *source;
    if (info == nullptr)
        return who;
    opal_value_t* kv = nullptr;
    OPAL_LIST_FOREACH(kv, info, opal_value_t) {
        if (kv->key != nullptr && std::strcmp(kv->key, OPAL_PMIX_EVENT_AFFECTED_PROC) == 0 &&
            kv->type == OPAL_NAME)
            who = kv->data.name;
    }
    return who;
}

void on_event(int status, const opal_process_name_t* source, opal_list_t* info, opal_list_t*,
              opal_pmix_notification_complete_fn_t cbfunc, void* cbdata) noexcept {
    const bool peer = status == OPAL_ERR_PROC_ABORTED && note_dead(affected(source, info));
    if (cbfunc != nullptr)
        cbfunc(peer ? OPAL_ERR_HANDLERS_COMPLETE : OPAL_SUCCESS, nullptr, nullptr, nullptr, cbdata);
}

void registered(int status, std::size_t ref, void*) noexcept {
    g_ev.ref = ref;
    g_ev.registration.store(status == OPAL_SUCCESS ? 1 : -1);
}

void deregistered(int, void* cbdata) noexcept {
    static_cast<std::atomic<bool>*>(cbdata)->store(true);
}

bool can_register() noexcept {
    return opal_pmix.register_evhandler != nullptr;
}

// Asks for the events; the answer comes to registered().
void register_handler() noexcept {
    opal_list_t codes;
    OBJ_CONSTRUCT(&codes, opal_list_t);
    opal_list_t directives;
    OBJ_CONSTRUCT(&directives, opal_list_t);
    auto* code = OBJ_NEW(opal_value_t);
    code->key = strdup("errorcode");
    code->type = OPAL_INT;
    code->data.integer = OPAL_ERR_PROC_ABORTED;
    opal_list_append(&codes, &code->super);
    auto* name = OBJ_NEW(opal_value_t);
    name->key = strdup(OPAL_PMIX_EVENT_HDLR_NAME);
    name->type = OPAL_STRING;
    name->data.string = strdup("pml-dr-peer-death");
    opal_list_append(&directives, &name->super);
    opal_pmix.register_evhandler(&codes, &directives, on_event, registered, nullptr);
    OPAL_LIST_DESTRUCT(&directives);
    OPAL_LIST_DESTRUCT(&codes);
}

// Asks to drop the handler; `done` is set when that is confirmed.
bool deregister_handler(std::atomic<bool>* done) noexcept {
    if (opal_pmix.deregister_evhandler == nullptr)
        return false;
    opal_pmix.deregister_evhandler(g_ev.ref, deregistered, done);
    return true;
}
#else
// Registered for the codes of a process's death only.
void on_event(std::size_t, pmix_status_t, const pmix_proc_t* source, pmix_info_t info[],
              std::size_t ninfo, pmix_info_t*, std::size_t,
              pmix_event_notification_cbfunc_fn_t cbfunc, void* cbdata) noexcept {
    // The process it is about: PMIX_EVENT_AFFECTED_PROC, else the source.
    const pmix_proc_t* about = source;
    for (std::size_t i = 0; i < ninfo; ++i) {
        if (PMIX_CHECK_KEY(&info[i], PMIX_EVENT_AFFECTED_PROC) && info[i].value.type == PMIX_PROC &&
            info[i].value.data.proc != nullptr)
            about = info[i].value.data.proc;
    }
    opal_process_name_t who{OPAL_JOBID_INVALID, OPAL_VPID_INVALID};
    int rc = OPAL_ERROR;
    if (about != nullptr)
        OPAL_PMIX_CONVERT_PROCT(rc, &who, const_cast<pmix_proc_t*>(about));
    if (rc == OPAL_SUCCESS)
        (void)note_dead(who);
    // Open MPI's handler after ours decides what becomes of the process.
    if (cbfunc != nullptr)
        cbfunc(PMIX_SUCCESS, nullptr, 0, nullptr, nullptr, cbdata);
}

void registered(pmix_status_t status, std::size_t ref, void*) noexcept {
    g_ev.ref = ref;
    g_ev.registration.store(status == PMIX_SUCCESS ? 1 : -1);
}

void deregistered(pmix_status_t, void* cbdata) noexcept {
    static_cast<std::atomic<bool>*>(cbdata)->store(true);
}

bool can_register() noexcept {
    return PMIx_Initialized();
}

void register_handler() noexcept {
    // PMIx reads these on its own thread after the call returns (it only
    // queues the registration): they live as long as the process.
    static pmix_status_t codes[] = {PMIX_ERR_PROC_ABORTED, PMIX_ERR_PROC_ABORTED_BY_SIG,
                                    PMIX_ERR_PROC_TERM_WO_SYNC};
    static pmix_info_t info[2];
    static bool loaded = false;
    if (!loaded) {
        PMIX_INFO_LOAD(&info[0], PMIX_EVENT_HDLR_NAME, "pml-dr-peer-death", PMIX_STRING);
        PMIX_INFO_LOAD(&info[1], PMIX_EVENT_HDLR_PREPEND, nullptr, PMIX_BOOL);
        loaded = true;
    }
    const pmix_status_t rc = PMIx_Register_event_handler(
        codes, std::size(codes), info, std::size(info), on_event, registered, nullptr);
    if (rc < 0)  // refused at once: registered() is not called
        g_ev.registration.store(-1);
}

bool deregister_handler(std::atomic<bool>* done) noexcept {
    return PMIx_Deregister_event_handler(g_ev.ref, deregistered, done) == PMIX_SUCCESS;
}
#endif

// Registered with opal_progress: declares the reported peers dead.
int events_progress() noexcept {
    if (!g_ev.pending.load(std::memory_order_relaxed))
        return 0;
    std::vector<opal_process_name_t> names;
    {
        const std::lock_guard lock(g_ev.mu);
        names.swap(g_ev.dead);
        g_ev.pending.store(false);
    }
    Guard g;
    const State& s = state();
    for (const opal_process_name_t& name : names) {
        core::PeerId peer = 0;
        if (!engine().find_peer(core::PeerName{name.jobid, name.vpid}, peer)) {
            logf(*s.log, LogLevel::Debug, "the runtime reports %s aborted: not a peer",
                 OPAL_NAME_PRINT(name));
            continue;
        }
        logf(*s.log, LogLevel::Warn, "the runtime reports %s aborted: its operations fail",
             OPAL_NAME_PRINT(name));
        reliability_declare_dead(peer, "the runtime reported it aborted");
    }
    return static_cast<int>(names.size());
}

}  // namespace

void runtime_events_init() noexcept {
    if (g_ev.registered || !can_register())
        return;
    if (opal_progress_register_lp(events_progress) == OPAL_SUCCESS)
        g_ev.progress_registered = true;
    g_ev.registration.store(0);
    register_handler();
    // As Open MPI waits for its own handlers (ompi_mpi_init): the answer may
    // come from the runtime's thread. Bounded: a runtime that never answers
    // leaves dead peers to be noticed by their silence.
    const Micros until = plugin::common::monotonic_now() + 10 * plugin::common::kSeconds;
    while (g_ev.registration.load() == 0 && plugin::common::monotonic_now() < until)
        opal_progress();
    g_ev.registered = g_ev.registration.load() == 1;
    g_ev.active.store(g_ev.registered);
    if (!g_ev.registered)
        logf(*state().log, LogLevel::Warn,
             "cannot register for the runtime's process-death events: a dead peer is "
             "noticed only by its silence");
}

void runtime_events_fini() noexcept {
    g_ev.active.store(false);
    if (g_ev.registered) {
        // Waited for (the handler must not run once this library is
        // unloaded), but not forever: ext3x drops the handler from its own
        // table before it asks the PMIx library, whose answer may never come.
        auto* done = new std::atomic<bool>(false);  // a late answer finds it
        if (deregister_handler(done)) {
            const Micros until = plugin::common::monotonic_now() + plugin::common::kSeconds;
            while (!done->load() && plugin::common::monotonic_now() < until)
                opal_progress();
        } else {
            done->store(true);  // nothing asked, nothing will answer
        }
        if (done->load())
            delete done;
    }
    g_ev.registered = false;
    if (g_ev.progress_registered) {
        opal_progress_unregister(events_progress);
        g_ev.progress_registered = false;
    }
    const std::lock_guard lock(g_ev.mu);
    g_ev.dead.clear();
    g_ev.pending.store(false);
}

}  // namespace pml::dr::mca
