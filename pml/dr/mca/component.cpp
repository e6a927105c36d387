// mca_pml_dr_component: what Open MPI's MCA base loads.
#include "ompi_prelude.hpp"

#include "config.hpp"
#include "local_path.hpp"
#include "opal_log.hpp"
#include "mca_params.hpp"
#include "params.hpp"
#include "pml.hpp"
#include "pvars.hpp"

namespace {

plugin::common::OpalLogSink g_log;
bool g_initialized = false;

int dr_register() noexcept;
int dr_open() noexcept;
int dr_close() noexcept;
mca_pml_base_module_t* dr_init(int* priority, bool enable_progress_threads,
                               bool enable_mpi_threads) noexcept;
int dr_finalize() noexcept;

}  // namespace

extern "C" {
// The symbol the MCA loader looks up: mca_<framework>_<component>_component.
// Version fields come from the headers of the runtime we are built against;
// the PML interface is 2.0.0 in 4.1 and 2.1.0 in 5.0 (same component struct).
__attribute__((visibility("default"))) mca_pml_base_component_t mca_pml_dr_component = {
    .pmlm_version =
        {
#if OMPI_MAJOR_VERSION >= 5
            MCA_PML_BASE_VERSION_2_1_0,
#else
            MCA_PML_BASE_VERSION_2_0_0,
#endif
            .mca_component_name = "dr",
            .mca_component_major_version = OMPI_MAJOR_VERSION,
            .mca_component_minor_version = OMPI_MINOR_VERSION,
            .mca_component_release_version = OMPI_RELEASE_VERSION,
            .mca_open_component = dr_open,
            .mca_close_component = dr_close,
            .mca_query_component = nullptr,
            .mca_register_component_params = dr_register,
        },
    .pmlm_data = {MCA_BASE_METADATA_PARAM_NONE},
    .pmlm_init = dr_init,
    .pmlm_finalize = dr_finalize,
};
}

namespace {

int dr_register() noexcept {
    const mca_base_component_t* self = &mca_pml_dr_component.pmlm_version;
    if (pml::dr::mca::register_params(self) != 0)
        return OMPI_ERROR;
    // Statistics are optional: a variable that does not register is not worth failing for.
    (void)pml::dr::mca::register_pvars(self);
    return OMPI_SUCCESS;
}

int dr_open() noexcept {
    g_log.open("pml:dr", pml::dr::mca::raw_params().verbose);
    return OMPI_SUCCESS;
}

int dr_close() noexcept {
    g_log.close();
    return OMPI_SUCCESS;
}

mca_pml_base_module_t* dr_init(int* priority, bool enable_progress_threads,
                               bool enable_mpi_threads) noexcept {
    pml::dr::core::Config config;
    const std::string err = pml::dr::core::validate(pml::dr::mca::raw_params(), config);
    // Named in --mca pml and set wrong: say so once and end the job.
    plugin::common::exit_on_bad_params(&mca_pml_dr_component.pmlm_version, err);
    *priority = pml::dr::mca::raw_params().priority;
    if (mca_bml_base_init(enable_progress_threads, enable_mpi_threads) != OMPI_SUCCESS) {
        plugin::common::logf(g_log, plugin::common::LogLevel::Error,
                             "no usable BTL; declining selection");
        return nullptr;
    }
    g_initialized = true;
    pml::dr::mca::local_publish(config, &mca_pml_dr_component.pmlm_version);
    return pml::dr::mca::module_init(config, g_log);
}

int dr_finalize() noexcept {
    if (!g_initialized)
        return OMPI_SUCCESS;
    g_initialized = false;
    const int rc = mca_bml.bml_finalize();
    pml::dr::mca::module_fini();
    return rc;
}

}  // namespace
