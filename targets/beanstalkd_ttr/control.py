"""beanstalkd_ttr control side: the run's tube, each job put with the target's TTR."""

from chaos import BeanstalkdQueueControl


class Control(BeanstalkdQueueControl):
    pass
