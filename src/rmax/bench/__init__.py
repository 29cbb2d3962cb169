"""The framework benchmark families are built on (rmax.families holds the families): Family and its
options, views, the runner, the kernels' launchers."""
