"""beanstalkd_ttr control side: the run's tube, each job put with the target's TTR."""

from chaos.backends.beanstalkd.control import BeanstalkdQueueControl


class Control(BeanstalkdQueueControl):
    pass
